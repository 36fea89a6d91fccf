cd /work/main 2>/dev/null || { mkdir -p /work && ln -sfn "$PWD" /work/main; cd /work/main; }
export OUT=$OUT/l; mkdir -p $OUT; R=$PWD
export PATH=/usr/local/cuda/bin:$PATH
GPU_FILTER='GpuTensorQueries.*:GpuLists.*:GpuListEpilogue.*' SHARDS=8 PREBUILT=build-device tools/device_run.sh shards > $OUT/shards.txt 2>&1
grep -h "FAILED\|Failure\|Expected\|Which is\|error" $OUT/gpu_shard*.log | head -40 > $OUT/fails.txt; rm -f $OUT/gpu_shard*.log $OUT/gpu_tests.log
export PYTHONPATH=$R/.devcarry/site GAMUT_CACHE_DIR=/tmp/kc
cd /tmp
python3 $R/bench/kernel_times.py --ks 511,512,256,1024 --data bf16,tf32 --queries product,kNN 2>&1 | grep gamut_main > $OUT/kt.txt
timeout 300 python3 $R/bench/tensor_queries.py --queries product,kNN --data bf16,tf32 --ks 256,1024 --product-sizes "" > $OUT/tq.txt 2>&1
