python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD
python3 -m pytest -q -p no:cacheprovider tests/gluon_kernels/test_hopper_gpu.py -n 8 2>&1 | tail -2
python3 benchmarks/hopper_attention.py --head-dims 64 --variants ws --runs 3 --out $OUT/bench_d64.json 2>&1 | tail -11
