# bench/pairstat.awk - the statistics of bench/nginx.sh's paired rounds:
# for each key, the mean of its paired differences with a 95% confidence
# interval (Student's t: mean +- t(0.975, n-1) * sd / sqrt(n)), their
# median and standard deviation.  A difference is one round's figure
# against its own unprofiled neighbour, so that what drifts between rounds
# (the host, other work on the machine) cancels; the interval then says how
# far the mean can be trusted from the spread of the rounds alone.
#
# Beside them, the median with a 95% interval that assumes no distribution
# (two of the sorted values, by the binomial law: bench/nginx.sh's pairs
# on a loaded machine have outliers, which move a mean and its interval far
# more than they move a median).
#
# Input: "KEY DIFFERENCE" lines.  Output, one line per key in the order of
# first appearance: "KEY n mean lo hi median sd mlo mhi" ("-" where there
# are too few values: 2 for lo, hi and sd, 6 for mlo and mhi).
#
# awk -v selfcheck=1 -f bench/pairstat.awk </dev/null checks the figures
# on known data (worked by hand, and by R's t.test) and exits 1 if one is
# off: `bench/nginx.sh --self-check` runs it.

# t(0.975, df): Student's t quantile for a two-sided 95% interval.  Between
# the table's rows, the row of the next lower df: a slightly wider interval,
# never a narrower one.
function t975(df,    d) {
	if (df < 1) return 0
	if (df <= 30) return T[df]
	for (d = df; !(d in T); d--) ;
	return T[d]
}

function init_t(    v, i, n) {
	n = split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 " \
		"2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 " \
		"2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", v, " ")
	for (i = 1; i <= n; i++) T[i] = v[i] + 0
	T[40] = 2.021; T[60] = 2.000; T[120] = 1.980; T[100000] = 1.960
}

# stats(list, n): sets S["mean"], S["sd"], S["lo"], S["hi"], S["median"]
# of list[1..n] (sorted in place for the median).
function stats(x, n,    i, j, t, s, ss, h, k) {
	delete S
	s = 0
	for (i = 1; i <= n; i++) s += x[i]
	S["mean"] = n ? s / n : 0
	ss = 0
	for (i = 1; i <= n; i++) ss += (x[i] - S["mean"]) ^ 2
	S["sd"] = n > 1 ? sqrt(ss / (n - 1)) : 0
	h = n > 1 ? t975(n - 1) * S["sd"] / sqrt(n) : 0
	S["lo"] = S["mean"] - h; S["hi"] = S["mean"] + h
	for (i = 2; i <= n; i++) {	# insertion sort: n is a few dozen
		t = x[i]
		for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]
		x[j + 1] = t
	}
	S["median"] = n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
	k = median_rank(n)
	S["mlo"] = k ? x[k] : S["median"]; S["mhi"] = k ? x[n + 1 - k] : S["median"]
}

# median_rank(n): the largest k with P(Binomial(n, 1/2) < k) <= 0.025, so
# that [x(k), x(n+1-k)] of the sorted values holds the median of what they
# are drawn from with at least 95% probability, whatever its distribution
# (0 when n is too small for any: n < 6).
function median_rank(n,    k, p, c) {
	p = 0.5 ^ n		# P(B = 0)
	c = p			# P(B <= k - 1), k = 1
	for (k = 0; c <= 0.025; k++) {
		p = p * (n - k) / (k + 1)	# P(B = k + 1)
		c += p
	}
	return k
}

function near(a, b) { return a - b < 0.001 && b - a < 0.001 }

# expect(name, "v1 v2 ...", mean, lo, hi, median, sd, mlo, mhi): one known
# case.
function expect(name, vals, mean, lo, hi, median, sd, mlo, mhi,    x, n) {
	n = split(vals, x, " ")
	stats(x, n)
	if (near(S["mean"], mean) && near(S["lo"], lo) && near(S["hi"], hi) &&
	    near(S["median"], median) && near(S["sd"], sd) && near(S["mlo"], mlo) &&
	    near(S["mhi"], mhi)) {
		print "ok pairstat: " name
		return
	}
	printf "FAIL pairstat: %s: mean %.4f [%.4f, %.4f] median %.4f [%.4f, %.4f] " \
		"sd %.4f, expected %.4f [%.4f, %.4f] median %.4f [%.4f, %.4f] sd %.4f\n",
		name, S["mean"], S["lo"], S["hi"], S["median"], S["mlo"], S["mhi"], S["sd"],
		mean, lo, hi, median, mlo, mhi, sd
	failed = 1
}

BEGIN {
	init_t()
	if (selfcheck) {
		# 1..5: sd sqrt(2.5), t(4) 2.776; too few for the median's
		# interval (P(B = 0) = 1/32 > 0.025).
		expect("five values", "3 1 5 2 4", 3, 1.037072, 4.962928, 3, 1.581139, 3, 3)
		# Two: t(1) 12.706, the widest interval there is.
		expect("two values", "-0.5 0.5", 0, -6.353, 6.353, 0, 0.707107, 0, 0)
		# 1..12: sd sqrt(13), t(11) 2.201; the median's interval from the
		# 3rd to the 10th (P(B <= 2) = 79/4096, P(B <= 3) = 299/4096).
		expect("twelve values", "12 11 10 9 8 7 6 5 4 3 2 1", 6.5, 4.209127, 8.790873,
			6.5, 3.605551, 3, 10)
		# 45 values (df 44: the df 40 row, 2.021): 0.1 * (1..45), sd
		# 1.3134; the median's interval from the 16th to the 30th.
		for (i = 1; i <= 45; i++) v45 = v45 " " i / 10
		expect("45 values, t between rows", v45, 2.3, 1.904310, 2.695690, 2.3, 1.313393,
			1.6, 3.0)
		# Ten: the median's interval from the 2nd to the 9th, the worst
		# value each side left out (P(B <= 1) = 11/1024).
		expect("ten values, an outlier", "0 1 1 2 2 3 3 4 4 40", 6, -2.596923, 14.596923,
			2.5, 12.018504, 1, 4)
		# One value: no interval (lo = hi = mean).
		expect("one value", "1.5", 1.5, 1.5, 1.5, 1.5, 0, 1.5, 1.5)
		exit failed
	}
}

NF >= 2 {
	if (!($1 in N)) order[++keys] = $1
	X[$1, ++N[$1]] = $2 + 0
}

END {
	if (selfcheck) exit failed
	for (k = 1; k <= keys; k++) {
		key = order[k]
		delete v
		for (i = 1; i <= N[key]; i++) v[i] = X[key, i]
		stats(v, N[key])
		lo = hi = sd = mlo = mhi = "-"
		if (N[key] > 1) {
			lo = sprintf("%.2f", S["lo"]); hi = sprintf("%.2f", S["hi"])
			sd = sprintf("%.2f", S["sd"])
		}
		if (median_rank(N[key])) {
			mlo = sprintf("%.2f", S["mlo"]); mhi = sprintf("%.2f", S["mhi"])
		}
		printf "%s %d %.2f %s %s %.2f %s %s %s\n", key, N[key], S["mean"], lo, hi,
			S["median"], sd, mlo, mhi
	}
}
