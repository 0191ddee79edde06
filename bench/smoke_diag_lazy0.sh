export PYTHONPATH=$PWD
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/klazy0 $OUT/build_lazy0.log -DDSPARKCTL_WS_LAZY_MAX=0 > /dev/null || { tail -5 $OUT/build_lazy0.log; exit 1; }
DSPARKCTL_KERNEL_SO=/tmp/klazy0/dsparkctl_sparse_mla_sm_90a.so timeout 120 python3 bench/smoke_diag.py --json $OUT/diag_lazy0.json > $OUT/diag_lazy0.log 2>&1
grep -E "misma|verdict|failing" $OUT/diag_lazy0.log | tail -8
python3 -c "
import json
for r in json.load(open('$OUT/diag_lazy0.json')): print(r['T'],r['H'],r['extra_topk'],round(r['out_ratio'],3),{k:v for k,v in r['forced'].items() if k in ('c6s0','c6s1','c6s2','c6s4','c4s0')})
"
