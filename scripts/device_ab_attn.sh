. scripts/device_env.sh; M=$MODEL_31B; B=$GS_DEVICE_BIN
$B/gemmaserve synth --preset 31b -o $M --quiet > $OUT/synth.log 2>&1 &
timeout 200 $B/gs_test_cuda --gtest_filter='CudaAttention*:CudaSpeculative.*:CudaModel*:CudaGolden*:CudaSynth*' > $OUT/t.log 2>&1; echo "tests rc $? ok $(grep -cE '^\[       OK' $OUT/t.log)"; grep -E '^\[  FAILED' $OUT/t.log | head -5; grep -A6 Failure $OUT/t.log | head -20
wait
tg() { timeout 150 $B/$1 bench -m $M --device cuda -p 0 -n $2 -d $3 --verify 5 -r 2 --json > $OUT/g.json 2>>$OUT/b.log; python3 -c "
import json
for r in json.load(open('$OUT/g.json'))['results']:
  if r['group'] in ('tg','verify'): print('   $1',r['test'],'%.1f us'%(r['seconds']*1e6), r.get('tokens_per_s',''), r.get('decode_steps',''))
"; }
for r in 1 2; do tg gemmaserve 128 0; tg gemmaserve.prev 128 0; done
tg gemmaserve 64 32768; tg gemmaserve.prev 64 32768
