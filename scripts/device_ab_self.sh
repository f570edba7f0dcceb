. scripts/device_env.sh; M=$MODEL_31B; B=$GS_DEVICE_BIN/gemmaserve
$B synth --preset 31b -o $M --quiet > $OUT/synth.log 2>&1 &
GS_MVS_SELF=1 timeout 120 $GS_DEVICE_BIN/gs_test_cuda --gtest_filter='CudaMatmul.*:CudaSpeculative.*' > $OUT/t.log 2>&1; echo "self tests rc $? ok $(grep -cE '^\[       OK' $OUT/t.log)"; grep -E '^\[  FAILED' $OUT/t.log | head -5
wait
ops() { env "$@" timeout 100 $B bench --ops --ops-only matmul --device cuda --json > $OUT/o.json 2>>$OUT/b.log; python3 -c "
import json,sys
for r in json.load(open('$OUT/o.json'))['results']:
  t=r['test']
  if r['group']=='matmul' and t.startswith('q4_K') and t.endswith(('rows 1','rows 5')) and 'separate' not in t: print('   ',t[:34],'%.1f'%(r['seconds']*1e6))
"; }
tg() { env "$@" timeout 150 $B bench -m $M --device cuda -p 0 -n 128 --verify 5 -r 2 --json > $OUT/g.json 2>>$OUT/b.log; python3 -c "
import json
for r in json.load(open('$OUT/g.json'))['results']: print('   ',r['test'],'%.1f us'%(r['seconds']*1e6), r.get('tokens_per_s',''), r.get('decode_steps',''))
"; }
for v in GS_MVS_SELF=0 GS_MVS_SELF=1; do echo "== ops $v"; ops $v; echo "== ops $v DIAG=2"; ops $v GS_MVS_DIAG=2; done
for r in 1 2; do for v in GS_MVS_SELF=0 GS_MVS_SELF=1; do echo "== tg $v"; tg $v; done; done
