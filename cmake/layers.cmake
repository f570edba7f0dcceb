# Layer libraries: each layer's headers are reachable only through its own include root,
# so a library that includes a layer it does not link fails to compile (the dependency rule).
#
# gs_layer(NAME <target> DIR <src/subdir> PREFIX <include prefix> SOURCES ... DEPS ...)
# creates ${CMAKE_BINARY_DIR}/include_roots/<target>/<PREFIX> -> <DIR> and exposes that root.

function(gs_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow=local -Wno-unused-parameter>)
    # GCC 12's -Wrestrict misfires on libstdc++'s string concatenation ("x" + std::string&&,
    # GCC bug 105329): warnings inside the standard library, not in our code.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
    endif()
    if(GS_WERROR)
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
    endif()
  endif()
endfunction()

function(gs_layer)
  cmake_parse_arguments(L "" "NAME;DIR;PREFIX" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(root "${CMAKE_BINARY_DIR}/include_roots/${L_NAME}")
  get_filename_component(prefix_parent "${root}/${L_PREFIX}" DIRECTORY)
  file(MAKE_DIRECTORY "${prefix_parent}")
  if(NOT EXISTS "${root}/${L_PREFIX}")
    file(CREATE_LINK "${CMAKE_SOURCE_DIR}/${L_DIR}" "${root}/${L_PREFIX}" SYMBOLIC)
  endif()
  if(L_SOURCES)
    add_library(${L_NAME} STATIC ${L_SOURCES})
    target_include_directories(${L_NAME} PUBLIC "${root}")
    target_link_libraries(${L_NAME} PUBLIC ${L_DEPS} PRIVATE ${L_PRIVATE_DEPS})
    gs_warnings(${L_NAME})
    set_target_properties(${L_NAME} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  else()
    add_library(${L_NAME} INTERFACE)
    target_include_directories(${L_NAME} INTERFACE "${root}")
    target_link_libraries(${L_NAME} INTERFACE ${L_DEPS})
  endif()
endfunction()
