export PYTHONUNBUFFERED=1
mkdir -p $OUT/ops/gpu-micro/gpu-micro
timeout 300 python3 -m simcluster.runner.gpu_micro --sections moe-permute --preheat 5 > $OUT/ops/gpu-micro/gpu-micro/stdout.txt 2> $OUT/ops/gpu-micro/gpu-micro/stderr.txt
echo "rc=$?" >> $OUT/ops/gpu-micro/gpu-micro/stderr.txt; tail -2 $OUT/ops/gpu-micro/gpu-micro/stderr.txt
