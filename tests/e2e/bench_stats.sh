# bench_stats.sh - the statistics of bench/nginx.sh (bench/pairstat.awk:
# the mean's t interval, the median's binomial interval) on known data,
# through the bench's own self-check.  No benchmark is run or asserted.
cd "$(dirname "$0")/../.."
bench/nginx.sh --self-check || echo "FAIL bench_stats: bench/nginx.sh --self-check exited with $?"
