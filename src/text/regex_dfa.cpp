// ECMA-262 pattern subset -> NFA (Thompson) -> DFA over code point classes (subset
// construction), pruned so that every state can still reach a match; products and length
// tables on top (regex_dfa.h).
#include "text/regex_dfa.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace gs::text {

namespace {

constexpr uint32_t kMaxCp = 0x10FFFF;
constexpr uint32_t kSurLo = 0xD800;
constexpr uint32_t kSurHi = 0xDFFF;

using Ranges = std::vector<CodeRange>;

Status bad(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }

// Sorted, merged, without surrogates.
Ranges normalize(Ranges r) {
  std::sort(r.begin(), r.end(), [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
  Ranges merged;
  for (const CodeRange& x : r) {
    if (!merged.empty() && x.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, x.hi);
    } else {
      merged.push_back(x);
    }
  }
  Ranges out;
  for (const CodeRange& x : merged) {
    if (x.hi < kSurLo || x.lo > kSurHi) {
      out.push_back(x);
      continue;
    }
    if (x.lo < kSurLo) out.push_back({x.lo, kSurLo - 1});
    if (x.hi > kSurHi) out.push_back({kSurHi + 1, x.hi});
  }
  return out;
}

Ranges negate(const Ranges& in) {
  const Ranges r = normalize(in);
  Ranges out;
  uint32_t next = 0;
  for (const CodeRange& x : r) {
    if (x.lo > next) out.push_back({next, x.lo - 1});
    next = x.hi + 1;
  }
  if (next <= kMaxCp) out.push_back({next, kMaxCp});
  return normalize(out);
}

Ranges all_chars() { return normalize({{0, kMaxCp}}); }
Ranges digit_chars() { return {{'0', '9'}}; }
Ranges word_chars() { return normalize({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); }
// WhiteSpace and LineTerminator (ECMA-262 22.2.2.9 CharacterClassEscape :: s; 12.2, 12.3).
Ranges space_chars() {
  return normalize({{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                    {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}});
}
// `.`: every character but a LineTerminator (22.2.2.7.1 without the s flag).
Ranges dot_chars() { return negate({{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}}); }

// ---------------------------------------------------------------------------------------
// Parser: pattern -> syntax tree.

struct Ast {
  enum Kind : uint8_t { kChars, kSeq, kAlt, kRepeat, kBol, kEol };
  Kind kind = kSeq;
  int32_t set = -1;           // kChars: index into sets
  std::vector<int32_t> kids;  // kSeq, kAlt; kRepeat: one
  int64_t min = 0;            // kRepeat
  int64_t max = 0;            // kRepeat; -1: no bound
};

bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_alnum(char32_t c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int hex_digit(char32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

std::string show(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else {
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
    s = buf;
  }
  return s;
}

class Parser {
 public:
  explicit Parser(std::u32string p) : p_(std::move(p)) {}

  Result<int32_t> parse() {
    GS_ASSIGN_OR_RETURN(int32_t root, disjunction(0));
    if (i_ < p_.size()) return bad("unmatched ')' at offset " + std::to_string(i_));
    return root;
  }

  std::vector<Ast> nodes;
  std::vector<Ranges> sets;

 private:
  bool at(char32_t c) const { return i_ < p_.size() && p_[i_] == c; }
  bool more() const { return i_ < p_.size(); }

  int32_t add(Ast a) {
    nodes.push_back(std::move(a));
    return static_cast<int32_t>(nodes.size() - 1);
  }
  int32_t chars(Ranges r) {
    sets.push_back(normalize(std::move(r)));
    Ast a;
    a.kind = Ast::kChars;
    a.set = static_cast<int32_t>(sets.size() - 1);
    return add(std::move(a));
  }

  Result<int32_t> disjunction(int depth) {
    if (depth > kRegexMaxNesting) return bad("groups nest deeper than " + std::to_string(kRegexMaxNesting));
    Ast alt;
    alt.kind = Ast::kAlt;
    GS_ASSIGN_OR_RETURN(int32_t first, alternative(depth));
    alt.kids.push_back(first);
    while (at('|')) {
      ++i_;
      GS_ASSIGN_OR_RETURN(int32_t next, alternative(depth));
      alt.kids.push_back(next);
    }
    if (alt.kids.size() == 1) return first;
    return add(std::move(alt));
  }

  Result<int32_t> alternative(int depth) {
    Ast seq;
    seq.kind = Ast::kSeq;
    while (more() && !at('|') && !at(')')) {
      GS_ASSIGN_OR_RETURN(int32_t t, term(depth));
      seq.kids.push_back(t);
    }
    return add(std::move(seq));
  }

  // {n}, {n,}, {n,m} at i_ (which is at '{'): true and the bounds when it is one; i_ past it.
  bool brace_quantifier(int64_t* min, int64_t* max) {
    size_t j = i_ + 1;
    const auto number = [&](int64_t* out) {
      const size_t begin = j;
      int64_t v = 0;
      while (j < p_.size() && is_digit(p_[j])) {
        v = std::min<int64_t>(v * 10 + (p_[j] - '0'), int64_t{1} << 40);  // saturates: refused later
        ++j;
      }
      *out = v;
      return j > begin;
    };
    if (!number(min)) return false;
    *max = *min;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      *max = -1;
      if (j < p_.size() && is_digit(p_[j])) number(max);
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    i_ = j + 1;
    return true;
  }

  Result<int32_t> term(int depth) {
    const char32_t c = p_[i_];
    if (c == '^' || c == '$') {
      ++i_;
      Ast a;
      a.kind = c == '^' ? Ast::kBol : Ast::kEol;
      const int32_t n = add(std::move(a));
      if (more() && (at('*') || at('+') || at('?'))) return bad("nothing to repeat before '" + show(p_[i_]) + "'");
      return n;
    }
    GS_ASSIGN_OR_RETURN(int32_t atom_node, atom(depth));
    // Quantifier (22.2.1 Quantifier), then '?' for lazy: the same set of strings.
    int64_t min = -2, max = -2;
    if (at('*')) {
      min = 0, max = -1, ++i_;
    } else if (at('+')) {
      min = 1, max = -1, ++i_;
    } else if (at('?')) {
      min = 0, max = 1, ++i_;
    } else if (at('{')) {
      const size_t before = i_;
      if (!brace_quantifier(&min, &max)) {
        i_ = before;
        min = -2;
      }
    }
    if (min == -2) return atom_node;
    if (max >= 0 && min > max) return bad("a quantifier {n,m} with n above m");
    if (at('?')) ++i_;
    Ast r;
    r.kind = Ast::kRepeat;
    r.kids = {atom_node};
    r.min = min;
    r.max = max;
    return add(std::move(r));
  }

  Result<int32_t> atom(int depth) {
    const char32_t c = p_[i_];
    switch (c) {
      case '*':
      case '+':
      case '?':
        return bad("nothing to repeat before '" + show(c) + "'");
      case '{': {
        int64_t a = 0, b = 0;
        const size_t before = i_;
        if (brace_quantifier(&a, &b)) {
          i_ = before;
          return bad("nothing to repeat before '{'");
        }
        ++i_;
        return chars({{'{', '{'}});
      }
      case '.':
        ++i_;
        return chars(dot_chars());
      case '(':
        return group(depth);
      case '[':
        return char_class();
      case '\\': {
        ++i_;
        Ranges r;
        GS_RETURN_IF_ERROR(escape(false, &r));
        return chars(std::move(r));
      }
      default:
        ++i_;
        return chars({{static_cast<uint32_t>(c), static_cast<uint32_t>(c)}});
    }
  }

  Result<int32_t> group(int depth) {
    ++i_;  // '('
    if (at('?')) {
      const char32_t k = i_ + 1 < p_.size() ? p_[i_ + 1] : 0;
      if (k == ':') {
        i_ += 2;
      } else if (k == '=' || k == '!') {
        return bad("lookahead assertions (?= and (?! are not supported");
      } else if (k == '<' && i_ + 2 < p_.size() && (p_[i_ + 2] == '=' || p_[i_ + 2] == '!')) {
        return bad("lookbehind assertions (?<= and (?<! are not supported");
      } else if (k == '<') {
        return bad("named groups (?<name>...) are not supported");
      } else {
        return bad("an unknown group '(?" + show(k) + "'");
      }
    }
    GS_ASSIGN_OR_RETURN(int32_t inner, disjunction(depth + 1));
    if (!at(')')) return bad("a group '(' is not closed");
    ++i_;
    return inner;
  }

  Result<int32_t> char_class() {
    ++i_;  // '['
    bool negated = false;
    if (at('^')) {
      negated = true;
      ++i_;
    }
    Ranges r;
    while (true) {
      if (!more()) return bad("a class '[' is not closed");
      if (at(']')) {
        ++i_;
        break;
      }
      // One ClassAtom, maybe a range a-b.
      Ranges lo_set;
      GS_ASSIGN_OR_RETURN(bool lo_single, class_atom(&lo_set));
      if (at('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        Ranges hi_set;
        GS_ASSIGN_OR_RETURN(bool hi_single, class_atom(&hi_set));
        if (!lo_single || !hi_single) return bad("a class range with a class escape (\\d, \\w, \\s) at an end");
        if (lo_set[0].lo > hi_set[0].lo) return bad("a class range out of order");
        r.push_back({lo_set[0].lo, hi_set[0].lo});
      } else {
        r.insert(r.end(), lo_set.begin(), lo_set.end());
      }
    }
    return chars(negated ? negate(r) : normalize(r));
  }

  // One class atom into *out; true when it is a single character.
  Result<bool> class_atom(Ranges* out) {
    const char32_t c = p_[i_++];
    if (c != '\\') {
      out->push_back({static_cast<uint32_t>(c), static_cast<uint32_t>(c)});
      return true;
    }
    GS_RETURN_IF_ERROR(escape(true, out));
    return out->size() == 1 && (*out)[0].lo == (*out)[0].hi;
  }

  // The escape after a '\' at i_ (22.2.1 AtomEscape, ClassEscape) into *out.
  Status escape(bool in_class, Ranges* out) {
    if (!more()) return bad("a pattern ends with '\\'");
    const char32_t c = p_[i_++];
    const auto one = [&](uint32_t cp) {
      out->push_back({cp, cp});
      return Status{};
    };
    switch (c) {
      case 'd': *out = digit_chars(); return {};
      case 'D': *out = negate(digit_chars()); return {};
      case 'w': *out = word_chars(); return {};
      case 'W': *out = negate(word_chars()); return {};
      case 's': *out = space_chars(); return {};
      case 'S': *out = negate(space_chars()); return {};
      case 'f': return one(0x0C);
      case 'n': return one(0x0A);
      case 'r': return one(0x0D);
      case 't': return one(0x09);
      case 'v': return one(0x0B);
      case 'b':
        if (in_class) return one(0x08);
        return bad("word boundaries (\\b) are not supported");
      case 'B': return bad("word boundaries (\\B) are not supported");
      case 'p':
      case 'P': return bad("unicode property escapes (\\p{...}) are not supported");
      case 'k': return bad("named backreferences (\\k<name>) are not supported");
      case 'c': {
        const char32_t l = more() ? p_[i_] : 0;
        if (!((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z'))) return bad("'\\c' not followed by a letter");
        ++i_;
        return one(static_cast<uint32_t>(l) % 32);
      }
      case '0':
        if (more() && is_digit(p_[i_])) return bad("octal escapes (\\0 and digits) are not supported");
        return one(0);
      case 'x': {
        const int a = i_ < p_.size() ? hex_digit(p_[i_]) : -1;
        const int b = i_ + 1 < p_.size() ? hex_digit(p_[i_ + 1]) : -1;
        if (a < 0 || b < 0) return bad("'\\x' not followed by two hex digits");
        i_ += 2;
        return one(static_cast<uint32_t>(a * 16 + b));
      }
      case 'u': {
        GS_ASSIGN_OR_RETURN(uint32_t cp, unicode_escape());
        return one(cp);
      }
      default:
        break;
    }
    if (is_digit(c)) return bad("backreferences (\\" + show(c) + ") are not supported");
    if (c < 0x80 && is_alnum(c)) return bad("an unknown escape '\\" + show(c) + "'");
    return one(static_cast<uint32_t>(c));  // an identity escape: \. \\ \/ \- \$ ...
  }

  // After "\u": HHHH (a surrogate pair "\uHHHH\uHHHH" as one character) or {H...}.
  Result<uint32_t> unicode_escape() {
    if (at('{')) {
      ++i_;
      uint32_t v = 0;
      size_t n = 0;
      while (more() && hex_digit(p_[i_]) >= 0) {
        v = std::min<uint32_t>(v * 16 + static_cast<uint32_t>(hex_digit(p_[i_])), 0x110000);
        ++i_;
        ++n;
      }
      if (n == 0 || !at('}') || v > kMaxCp) return bad("a malformed '\\u{...}' escape");
      ++i_;
      if (v >= kSurLo && v <= kSurHi) return bad("a lone surrogate (\\u{" + std::to_string(v) + "}) matches no character");
      return v;
    }
    const auto four = [&](size_t at, uint32_t* v) {
      if (at + 4 > p_.size()) return false;
      *v = 0;
      for (size_t k = 0; k < 4; ++k) {
        const int h = hex_digit(p_[at + k]);
        if (h < 0) return false;
        *v = *v * 16 + static_cast<uint32_t>(h);
      }
      return true;
    };
    uint32_t v = 0;
    if (!four(i_, &v)) return bad("'\\u' not followed by four hex digits");
    i_ += 4;
    if (v >= 0xD800 && v <= 0xDBFF && i_ + 6 <= p_.size() && p_[i_] == '\\' && p_[i_ + 1] == 'u') {
      uint32_t low = 0;
      if (four(i_ + 2, &low) && low >= 0xDC00 && low <= 0xDFFF) {
        i_ += 6;
        return 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
      }
    }
    if (v >= kSurLo && v <= kSurHi) return bad("a lone surrogate escape matches no character of a JSON string");
    return v;
  }

  std::u32string p_;
  size_t i_ = 0;
};

// ---------------------------------------------------------------------------------------
// NFA (Thompson): each state has epsilon edges (plain, `^` only at the start, `$` only at
// the end) and at most one edge on a set of characters.

struct NfaState {
  std::vector<int32_t> eps;
  std::vector<int32_t> bol;
  std::vector<int32_t> eol;
  int32_t set = -1;
  int32_t to = -1;
};

class NfaBuilder {
 public:
  NfaBuilder(const std::vector<Ast>& ast) : ast_(ast) {}
  std::vector<NfaState> states;

  Result<int32_t> add() {
    if (states.size() >= static_cast<size_t>(kRegexMaxNfaStates)) {
      return bad("its automaton needs more than " + std::to_string(kRegexMaxNfaStates) +
                 " states (a repeat {n,m} too large?)");
    }
    states.emplace_back();
    return static_cast<int32_t>(states.size() - 1);
  }

  // The fragment of node `a`: its entry and exit states.
  Result<std::pair<int32_t, int32_t>> build(int32_t a) {
    const Ast& n = ast_[static_cast<size_t>(a)];
    switch (n.kind) {
      case Ast::kChars: {
        GS_ASSIGN_OR_RETURN(int32_t s, add());
        GS_ASSIGN_OR_RETURN(int32_t e, add());
        states[static_cast<size_t>(s)].set = n.set;
        states[static_cast<size_t>(s)].to = e;
        return std::make_pair(s, e);
      }
      case Ast::kBol:
      case Ast::kEol: {
        GS_ASSIGN_OR_RETURN(int32_t s, add());
        GS_ASSIGN_OR_RETURN(int32_t e, add());
        (n.kind == Ast::kBol ? states[static_cast<size_t>(s)].bol : states[static_cast<size_t>(s)].eol).push_back(e);
        return std::make_pair(s, e);
      }
      case Ast::kSeq: {
        GS_ASSIGN_OR_RETURN(int32_t s, add());
        int32_t end = s;
        for (int32_t k : n.kids) {
          GS_ASSIGN_OR_RETURN(auto f, build(k));
          states[static_cast<size_t>(end)].eps.push_back(f.first);
          end = f.second;
        }
        return std::make_pair(s, end);
      }
      case Ast::kAlt: {
        GS_ASSIGN_OR_RETURN(int32_t s, add());
        GS_ASSIGN_OR_RETURN(int32_t e, add());
        for (int32_t k : n.kids) {
          GS_ASSIGN_OR_RETURN(auto f, build(k));
          states[static_cast<size_t>(s)].eps.push_back(f.first);
          states[static_cast<size_t>(f.second)].eps.push_back(e);
        }
        return std::make_pair(s, e);
      }
      case Ast::kRepeat: {
        GS_ASSIGN_OR_RETURN(int32_t s, add());
        int32_t end = s;
        // The copies are built one by one, so a huge count stops at the state limit.
        for (int64_t i = 0; i < n.min; ++i) {
          GS_ASSIGN_OR_RETURN(auto f, build(n.kids[0]));
          states[static_cast<size_t>(end)].eps.push_back(f.first);
          end = f.second;
        }
        if (n.max < 0) {
          GS_ASSIGN_OR_RETURN(int32_t loop, add());
          GS_ASSIGN_OR_RETURN(auto f, build(n.kids[0]));
          states[static_cast<size_t>(end)].eps.push_back(loop);
          states[static_cast<size_t>(loop)].eps.push_back(f.first);
          states[static_cast<size_t>(f.second)].eps.push_back(loop);
          return std::make_pair(s, loop);
        }
        GS_ASSIGN_OR_RETURN(int32_t e, add());
        for (int64_t i = n.min; i < n.max; ++i) {
          GS_ASSIGN_OR_RETURN(auto f, build(n.kids[0]));
          states[static_cast<size_t>(end)].eps.push_back(e);
          states[static_cast<size_t>(end)].eps.push_back(f.first);
          end = f.second;
        }
        states[static_cast<size_t>(end)].eps.push_back(e);
        return std::make_pair(s, e);
      }
    }
    return bad("internal: unknown node");
  }

 private:
  const std::vector<Ast>& ast_;
};

Status over_budget() {
  return bad("its automaton is too large to build (the schema's patterns together may take at most the budget "
             "of work and memory; a simpler pattern or fewer repeats)");
}

}  // namespace

bool decode_utf8(std::string_view text, std::u32string* out) {
  out->clear();
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    int need = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80) {
      cp = c;
    } else if (c >= 0xC2 && c <= 0xDF) {
      need = 1, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (need > 0 && i + static_cast<size_t>(need) >= text.size()) return false;
    for (int k = 1; k <= need; ++k) {
      const auto d = static_cast<unsigned char>(text[i + static_cast<size_t>(k)]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > kMaxCp || (cp >= kSurLo && cp <= kSurHi)) return false;
    out->push_back(static_cast<char32_t>(cp));
    i += static_cast<size_t>(need) + 1;
  }
  return true;
}

Result<RegexDfa> RegexDfa::compile(std::string_view pattern, RegexBudget* budget) {
  std::u32string cps;
  if (!decode_utf8(pattern, &cps)) return bad("the pattern is not valid UTF-8");
  Parser parser(std::move(cps));
  GS_ASSIGN_OR_RETURN(int32_t root, parser.parse());
  budget->work -= static_cast<int64_t>(parser.nodes.size() + pattern.size());
  std::vector<Ranges>& sets = parser.sets;
  sets.push_back(all_chars());
  const auto all_set = static_cast<int32_t>(sets.size() - 1);

  // Not anchored: any characters before and after the match (JSON Schema 2020-12 validation
  // 6.3.3). `^` and `$` edges are taken only at the start and at the end.
  NfaBuilder nfa(parser.nodes);
  GS_ASSIGN_OR_RETURN(int32_t pre, nfa.add());
  GS_ASSIGN_OR_RETURN(auto body, nfa.build(root));
  GS_ASSIGN_OR_RETURN(int32_t post, nfa.add());
  std::vector<NfaState>& st = nfa.states;
  st[static_cast<size_t>(pre)].set = all_set;
  st[static_cast<size_t>(pre)].to = pre;
  st[static_cast<size_t>(pre)].eps.push_back(body.first);
  st[static_cast<size_t>(body.second)].eps.push_back(post);
  st[static_cast<size_t>(post)].set = all_set;
  st[static_cast<size_t>(post)].to = post;
  budget->work -= static_cast<int64_t>(st.size());

  // Character classes: the pieces between every boundary of every set.
  std::vector<uint32_t> cuts = {0, kMaxCp + 1};
  for (const Ranges& r : sets) {
    for (const CodeRange& x : r) {
      cuts.push_back(x.lo);
      cuts.push_back(x.hi + 1);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  const size_t n_classes = cuts.size() - 1;  // class c: cuts[c] .. cuts[c+1]-1
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> set_classes(sets.size());
  for (size_t s = 0; s < sets.size(); ++s) {
    for (const CodeRange& x : sets[s]) {
      const auto first = static_cast<uint32_t>(std::lower_bound(cuts.begin(), cuts.end(), x.lo) - cuts.begin());
      const auto last = static_cast<uint32_t>(std::lower_bound(cuts.begin(), cuts.end(), x.hi + 1) - cuts.begin()) - 1;
      set_classes[s].emplace_back(first, last);
    }
  }
  budget->work -= static_cast<int64_t>(cuts.size());

  // Epsilon closure of `seeds` (sorted, unique).
  std::vector<int32_t> mark(st.size(), -1);
  int32_t generation = 0;
  std::vector<int32_t> stack;
  const auto closure = [&](const std::vector<int32_t>& seeds, bool at_start, bool at_end) {
    ++generation;
    std::vector<int32_t> out;
    stack.assign(seeds.begin(), seeds.end());
    for (int32_t s : seeds) mark[static_cast<size_t>(s)] = generation;
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      out.push_back(s);
      const NfaState& n = st[static_cast<size_t>(s)];
      const auto go = [&](const std::vector<int32_t>& to) {
        for (int32_t t : to) {
          if (mark[static_cast<size_t>(t)] != generation) {
            mark[static_cast<size_t>(t)] = generation;
            stack.push_back(t);
          }
        }
      };
      go(n.eps);
      if (at_start) go(n.bol);
      if (at_end) go(n.eol);
      budget->work -= 1 + static_cast<int64_t>(n.eps.size());
    }
    std::sort(out.begin(), out.end());
    return out;
  };

  RegexDfa dfa;
  std::map<std::pair<bool, std::vector<int32_t>>, int32_t> index;
  std::vector<std::vector<int32_t>> members;
  std::vector<uint8_t> initial;
  const auto state_of = [&](std::vector<int32_t> set, bool is_initial) -> Result<int32_t> {
    auto key = std::make_pair(is_initial, std::move(set));
    if (auto it = index.find(key); it != index.end()) return it->second;
    if (members.size() >= static_cast<size_t>(kRegexMaxDfaStates) * 4) {
      return bad("its automaton needs more than " + std::to_string(kRegexMaxDfaStates) + " states");
    }
    const auto id = static_cast<int32_t>(members.size());
    budget->bytes -= static_cast<int64_t>(key.second.size() * sizeof(int32_t) + 64);
    members.push_back(key.second);
    initial.push_back(is_initial ? 1 : 0);
    index.emplace(std::move(key), id);
    return id;
  };
  GS_ASSIGN_OR_RETURN(int32_t start, state_of(closure({pre}, true, false), true));
  (void)start;
  std::vector<std::vector<int32_t>> bucket(n_classes);
  std::vector<uint32_t> touched;
  for (size_t d = 0; d < members.size(); ++d) {
    if (budget->work < 0 || budget->bytes < 0) return over_budget();
    touched.clear();
    for (int32_t s : members[d]) {
      const NfaState& n = st[static_cast<size_t>(s)];
      if (n.set < 0) continue;
      for (const auto& [first, last] : set_classes[static_cast<size_t>(n.set)]) {
        for (uint32_t c = first; c <= last; ++c) {
          if (bucket[c].empty()) touched.push_back(c);
          bucket[c].push_back(n.to);
        }
        budget->work -= last - first + 1;
      }
      if (budget->work < 0) return over_budget();
    }
    std::sort(touched.begin(), touched.end());
    std::vector<Edge> edges;
    for (uint32_t c : touched) {
      std::vector<int32_t>& b = bucket[c];
      std::sort(b.begin(), b.end());
      b.erase(std::unique(b.begin(), b.end()), b.end());
      GS_ASSIGN_OR_RETURN(int32_t to, state_of(closure(b, false, false), false));
      b.clear();
      const uint32_t lo = cuts[c], hi = cuts[c + 1] - 1;
      if (!edges.empty() && edges.back().to == to && edges.back().hi + 1 == lo) {
        edges.back().hi = hi;
      } else {
        edges.push_back({lo, hi, to});
      }
    }
    budget->bytes -= static_cast<int64_t>(edges.size() * sizeof(Edge));
    dfa.edges_.push_back(std::move(edges));
    const std::vector<int32_t> at_end = closure(members[d], initial[d] != 0, true);
    dfa.accept_.push_back(std::binary_search(at_end.begin(), at_end.end(), post) ? 1 : 0);
  }
  if (budget->work < 0 || budget->bytes < 0) return over_budget();
  if (!dfa.prune(0)) return bad("no string matches it");
  if (dfa.size() > kRegexMaxDfaStates) {
    return bad("its automaton needs more than " + std::to_string(kRegexMaxDfaStates) + " states");
  }
  return dfa;
}

bool RegexDfa::prune(int32_t start) {
  const auto n = edges_.size();
  // Live: reaches an accepting state (backwards from them).
  std::vector<std::vector<int32_t>> back(n);
  for (size_t s = 0; s < n; ++s) {
    for (const Edge& e : edges_[s]) back[static_cast<size_t>(e.to)].push_back(static_cast<int32_t>(s));
  }
  std::vector<uint8_t> live(n, 0);
  std::vector<int32_t> todo;
  for (size_t s = 0; s < n; ++s) {
    if (accept_[s]) {
      live[s] = 1;
      todo.push_back(static_cast<int32_t>(s));
    }
  }
  while (!todo.empty()) {
    const int32_t s = todo.back();
    todo.pop_back();
    for (int32_t p : back[static_cast<size_t>(s)]) {
      if (!live[static_cast<size_t>(p)]) {
        live[static_cast<size_t>(p)] = 1;
        todo.push_back(p);
      }
    }
  }
  if (!live[static_cast<size_t>(start)]) {
    edges_.clear();
    accept_.clear();
    return false;
  }
  // Reached from the start through live states, numbered in that order (start: 0).
  std::vector<int32_t> id(n, -1);
  std::vector<int32_t> order = {start};
  id[static_cast<size_t>(start)] = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    for (const Edge& e : edges_[static_cast<size_t>(order[k])]) {
      if (live[static_cast<size_t>(e.to)] && id[static_cast<size_t>(e.to)] < 0) {
        id[static_cast<size_t>(e.to)] = static_cast<int32_t>(order.size());
        order.push_back(e.to);
      }
    }
  }
  std::vector<std::vector<Edge>> edges(order.size());
  std::vector<uint8_t> accept(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const auto old = static_cast<size_t>(order[k]);
    accept[k] = accept_[old];
    for (const Edge& e : edges_[old]) {
      if (!live[static_cast<size_t>(e.to)]) continue;
      const int32_t to = id[static_cast<size_t>(e.to)];
      if (!edges[k].empty() && edges[k].back().to == to && edges[k].back().hi + 1 == e.lo) {
        edges[k].back().hi = e.hi;
      } else {
        edges[k].push_back({e.lo, e.hi, to});
      }
    }
  }
  edges_ = std::move(edges);
  accept_ = std::move(accept);
  min_length_ = 0;
  max_length_ = -1;
  endless_.clear();
  longest_.clear();
  fit_.clear();
  fit_words_ = 0;
  return true;
}

namespace {

// The states of a product of two automata (intersect, unite): each a pair of states of the
// two, numbered in the order found. edge() gives the pair's number, adding the pair to those
// to explore when it is new, and adds the range [lo, hi] to it to `edges`, merged into the
// last edge when that one goes to the same state and ends at lo - 1.
struct ProductStates {
  std::map<std::pair<int32_t, int32_t>, int32_t> index;
  std::vector<std::pair<int32_t, int32_t>> pairs = {{0, 0}};
  ProductStates() { index[{0, 0}] = 0; }

  template <class E>
  void edge(std::pair<int32_t, int32_t> key, uint32_t lo, uint32_t hi, std::vector<E>& edges) {
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, static_cast<int32_t>(pairs.size())).first;
      pairs.push_back(key);
    }
    if (!edges.empty() && edges.back().to == it->second && edges.back().hi + 1 == lo) {
      edges.back().hi = hi;
    } else {
      edges.push_back({lo, hi, it->second});
    }
  }
};

}  // namespace

Result<RegexDfa> RegexDfa::intersect(const RegexDfa& a, const RegexDfa& b, RegexBudget* budget) {
  RegexDfa out;
  ProductStates states;
  const auto& pairs = states.pairs;
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (pairs.size() > static_cast<size_t>(kRegexMaxDfaStates) * 4) {
      return bad("the automaton of both needs more than " + std::to_string(kRegexMaxDfaStates) + " states");
    }
    const auto [x, y] = pairs[k];
    const auto& ea = a.edges(x);
    const auto& eb = b.edges(y);
    std::vector<Edge> edges;
    size_t i = 0, j = 0;
    while (i < ea.size() && j < eb.size()) {
      const uint32_t lo = std::max(ea[i].lo, eb[j].lo);
      const uint32_t hi = std::min(ea[i].hi, eb[j].hi);
      if (lo <= hi) states.edge({ea[i].to, eb[j].to}, lo, hi, edges);
      if (ea[i].hi < eb[j].hi) {
        ++i;
      } else {
        ++j;
      }
      --budget->work;
    }
    budget->bytes -= static_cast<int64_t>(edges.size() * sizeof(Edge) + 64);
    if (budget->work < 0 || budget->bytes < 0) return over_budget();
    out.edges_.push_back(std::move(edges));
    out.accept_.push_back(a.accepts(x) && b.accepts(y) ? 1 : 0);
  }
  if (!out.prune(0)) return RegexDfa{};  // none
  if (out.size() > kRegexMaxDfaStates) {
    return bad("the automaton of both needs more than " + std::to_string(kRegexMaxDfaStates) + " states");
  }
  return out;
}

Result<RegexDfa> RegexDfa::unite(const RegexDfa& a, const RegexDfa& b, RegexBudget* budget) {
  RegexDfa out;
  ProductStates states;  // a side of -1: that side has died
  const auto& pairs = states.pairs;
  const std::vector<Edge> none;
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (pairs.size() > static_cast<size_t>(kRegexMaxDfaStates) * 4) {
      return bad("the automaton of either needs more than " + std::to_string(kRegexMaxDfaStates) + " states");
    }
    const auto [x, y] = pairs[k];
    const auto& ea = x >= 0 ? a.edges(x) : none;
    const auto& eb = y >= 0 ? b.edges(y) : none;
    // The points where an edge of either begins or ends, in order: between two, each side
    // has one edge or none.
    std::vector<uint64_t> cuts;
    for (const auto* es : {&ea, &eb}) {
      for (const Edge& e : *es) {
        cuts.push_back(e.lo);
        cuts.push_back(static_cast<uint64_t>(e.hi) + 1);
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<Edge> edges;
    size_t i = 0, j = 0;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      const auto lo = static_cast<uint32_t>(cuts[c]);
      const auto hi = static_cast<uint32_t>(cuts[c + 1] - 1);
      while (i < ea.size() && ea[i].hi < lo) ++i;
      while (j < eb.size() && eb[j].hi < lo) ++j;
      const int32_t ta = i < ea.size() && ea[i].lo <= lo ? ea[i].to : -1;
      const int32_t tb = j < eb.size() && eb[j].lo <= lo ? eb[j].to : -1;
      --budget->work;
      if (ta < 0 && tb < 0) continue;
      states.edge({ta, tb}, lo, hi, edges);
    }
    budget->bytes -= static_cast<int64_t>(edges.size() * sizeof(Edge) + 64);
    if (budget->work < 0 || budget->bytes < 0) return over_budget();
    out.edges_.push_back(std::move(edges));
    out.accept_.push_back((x >= 0 && a.accepts(x)) || (y >= 0 && b.accepts(y)) ? 1 : 0);
  }
  if (!out.prune(0)) return bad("no string matches either");
  if (out.size() > kRegexMaxDfaStates) {
    return bad("the automaton of either needs more than " + std::to_string(kRegexMaxDfaStates) + " states");
  }
  return out;
}

Result<RegexDfa> RegexDfa::without_code_point(uint32_t cp) const {
  RegexDfa out = *this;
  for (auto& edges : out.edges_) {
    std::vector<Edge> kept;
    for (const Edge& e : edges) {
      if (cp < e.lo || cp > e.hi) {
        kept.push_back(e);
        continue;
      }
      if (e.lo < cp) kept.push_back({e.lo, cp - 1, e.to});
      if (cp < e.hi) kept.push_back({cp + 1, e.hi, e.to});
    }
    edges = std::move(kept);
  }
  if (!out.prune(0)) return bad("no string without '" + show(cp) + "' matches it");
  return out;
}

Result<RegexDfa> RegexDfa::bounded(int64_t min_length, int64_t max_length, RegexBudget* budget) const {
  RegexDfa out = *this;
  out.min_length_ = min_length;
  out.max_length_ = max_length;
  const auto n = static_cast<size_t>(size());
  // Each state's distinct successors.
  std::vector<std::vector<int32_t>> succ(n);
  for (size_t s = 0; s < n; ++s) {
    for (const Edge& e : edges_[s]) succ[s].push_back(e.to);
    std::sort(succ[s].begin(), succ[s].end());
    succ[s].erase(std::unique(succ[s].begin(), succ[s].end()), succ[s].end());
  }
  if (max_length < 0) {
    // Longest completion, or endless where a cycle is reachable (depth-first; a state met
    // again while on the path closes a cycle). Every state reaches an accepting one.
    out.endless_.assign(n, 0);
    out.longest_.assign(n, 0);
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<int32_t, size_t>> path;
    for (size_t root = 0; root < n; ++root) {
      if (color[root] != 0) continue;
      path.emplace_back(static_cast<int32_t>(root), 0);
      color[root] = 1;
      while (!path.empty()) {
        auto& [s, k] = path.back();
        const auto su = static_cast<size_t>(s);
        if (k < succ[su].size()) {
          const auto t = static_cast<size_t>(succ[su][k++]);
          if (color[t] == 1) {
            out.endless_[su] = 1;
          } else if (color[t] == 0) {
            color[t] = 1;
            path.emplace_back(static_cast<int32_t>(t), 0);
          }
          continue;
        }
        int64_t longest = accept_[su] ? 0 : -1;
        for (int32_t t : succ[su]) {
          if (out.endless_[static_cast<size_t>(t)]) out.endless_[su] = 1;
          longest = std::max(longest, 1 + out.longest_[static_cast<size_t>(t)]);
        }
        out.longest_[su] = longest;
        color[su] = 2;
        path.pop_back();
      }
      budget->work -= static_cast<int64_t>(n);
    }
    if (!out.viable(0, 0)) return bad("no string of at least minLength characters matches it");
    return out;
  }
  // A table of 2^32 lengths or more (1 GiB a state) is past any budget a request gets, and its
  // size and work would overflow below (maxLength 2^63 - 1 made a negative size: a credit to the
  // budget, then a std::length_error out of the vector): refused as past the budget, spent.
  if (max_length >= int64_t{1} << 32) {
    budget->bytes = std::min<int64_t>(budget->bytes, 0) - 1;
    return bad("maxLength " + std::to_string(max_length) + " with it needs a table too large to hold");
  }
  // exact[s] bit k: a match follows from s in exactly k more characters; then fit[s] bit l:
  // some k in max(0, min - l) .. max - l has one.
  const auto words = static_cast<size_t>((max_length + 1 + 63) / 64);
  const int64_t cells = static_cast<int64_t>(n) * static_cast<int64_t>(words);
  int64_t edges = 0;
  for (const auto& s : succ) edges += static_cast<int64_t>(s.size());
  budget->bytes -= 2 * cells * 8;
  budget->work -= (max_length + 1) * (edges + static_cast<int64_t>(n));
  if (budget->work < 0 || budget->bytes < 0) {
    return bad("maxLength " + std::to_string(max_length) + " with it needs a table too large to hold");
  }
  std::vector<uint64_t> exact(n * words, 0);
  const auto get = [&](const std::vector<uint64_t>& v, size_t s, int64_t k) {
    return (v[s * words + static_cast<size_t>(k / 64)] >> (k % 64)) & 1;
  };
  const auto set = [&](std::vector<uint64_t>& v, size_t s, int64_t k) {
    v[s * words + static_cast<size_t>(k / 64)] |= uint64_t{1} << (k % 64);
  };
  for (size_t s = 0; s < n; ++s) {
    if (accept_[s]) set(exact, s, 0);
  }
  for (int64_t k = 1; k <= max_length; ++k) {
    for (size_t s = 0; s < n; ++s) {
      for (int32_t t : succ[s]) {
        if (get(exact, static_cast<size_t>(t), k - 1)) {
          set(exact, s, k);
          break;
        }
      }
    }
  }
  out.fit_.assign(n * words, 0);
  out.fit_words_ = static_cast<int64_t>(words);
  std::vector<int64_t> count(static_cast<size_t>(max_length) + 2);
  for (size_t s = 0; s < n; ++s) {
    count[0] = 0;
    for (int64_t k = 0; k <= max_length; ++k) count[static_cast<size_t>(k) + 1] = count[static_cast<size_t>(k)] + static_cast<int64_t>(get(exact, s, k));
    for (int64_t l = 0; l <= max_length; ++l) {
      const int64_t lo = std::max<int64_t>(0, min_length - l);
      const int64_t hi = max_length - l;
      if (lo <= hi && count[static_cast<size_t>(hi) + 1] - count[static_cast<size_t>(lo)] > 0) set(out.fit_, s, l);
    }
  }
  if (!out.viable(0, 0)) {
    return bad("no string of minLength " + std::to_string(min_length) + " to maxLength " + std::to_string(max_length) +
               " characters matches it");
  }
  return out;
}

int32_t RegexDfa::step(int32_t state, uint32_t cp) const {
  const auto& e = edges_[static_cast<size_t>(state)];
  auto it = std::upper_bound(e.begin(), e.end(), cp, [](uint32_t v, const Edge& x) { return v < x.lo; });
  if (it == e.begin()) return -1;
  --it;
  return cp <= it->hi ? it->to : -1;
}

bool RegexDfa::viable(int32_t state, int64_t length) const {
  const auto s = static_cast<size_t>(state);
  if (max_length_ >= 0) {
    if (length < 0 || length > max_length_ || fit_.empty()) return false;
    return (fit_[s * static_cast<size_t>(fit_words_) + static_cast<size_t>(length / 64)] >> (length % 64)) & 1;
  }
  if (length >= min_length_ || endless_.empty()) return true;
  return endless_[s] || length + longest_[s] >= min_length_;
}

bool RegexDfa::may_take(int32_t state, int64_t length, const CodeRange* ranges, int n_ranges) const {
  for (const Edge& e : edges_[static_cast<size_t>(state)]) {
    for (int k = 0; k < n_ranges; ++k) {
      if (e.lo <= ranges[k].hi && ranges[k].lo <= e.hi && viable(e.to, length)) return true;
    }
  }
  return false;
}

bool RegexDfa::matches(std::u32string_view text) const {
  int32_t s = 0;
  for (char32_t c : text) {
    s = step(s, static_cast<uint32_t>(c));
    if (s < 0) return false;
  }
  const auto n = static_cast<int64_t>(text.size());
  return accepts(s) && n >= min_length_ && (max_length_ < 0 || n <= max_length_);
}

int64_t RegexDfa::bytes() const {
  int64_t b = static_cast<int64_t>(fit_.size() * 8 + accept_.size() + endless_.size() + longest_.size() * 8);
  for (const auto& e : edges_) b += static_cast<int64_t>(e.size() * sizeof(Edge) + 24);
  return b;
}

}  // namespace gs::text
