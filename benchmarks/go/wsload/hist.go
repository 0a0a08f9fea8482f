package main

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// histogram counts latencies in nanoseconds in log-linear buckets (the HDR layout):
// values below 2^11 ns get a bucket each, and every power of two above that is split
// into 1024 equal buckets, so any recorded value is known to within 0.1%. Counts are
// atomic, so every connection's goroutine records into the same histogram.
type histogram struct {
	counts []atomic.Uint64
	total  atomic.Uint64
	max    atomic.Int64
}

const (
	subBits    = 10
	subBuckets = 1 << subBits       // buckets per power of two
	linearTop  = 2 * subBuckets     // values below this get their own bucket
	maxShift   = 63 - (subBits + 1) // shifts needed to cover any int64
)

func newHistogram() *histogram {
	return &histogram{counts: make([]atomic.Uint64, linearTop+maxShift*subBuckets)}
}

func bucketOf(v int64) int {
	if v < linearTop {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - (subBits + 1)
	mantissa := int(v >> shift) // in [subBuckets, 2*subBuckets)
	return linearTop + (shift-1)*subBuckets + (mantissa - subBuckets)
}

// upperEdge is the largest value that falls into bucket i.
func upperEdge(i int) int64 {
	if i < linearTop {
		return int64(i)
	}
	k := i - linearTop
	shift := k/subBuckets + 1
	mantissa := int64(k%subBuckets + subBuckets)
	edge := ((mantissa + 1) << shift) - 1
	if edge < 0 { // the top bucket's edge overflows int64
		return math.MaxInt64
	}
	return edge
}

func (h *histogram) record(ns int64) {
	h.counts[bucketOf(ns)].Add(1)
	h.total.Add(1)
	for {
		old := h.max.Load()
		if ns <= old || h.max.CompareAndSwap(old, ns) {
			return
		}
	}
}

// quantile is the smallest bucket edge at or below which a fraction q of the values lie
// (capped at the largest value seen), in nanoseconds; -1 when nothing was recorded.
func (h *histogram) quantile(q float64) int64 {
	total := h.total.Load()
	if total == 0 {
		return -1
	}
	rank := uint64(q*float64(total) + 0.5)
	if rank < 1 {
		rank = 1
	}
	if rank > total {
		rank = total
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return min(upperEdge(i), h.max.Load())
		}
	}
	return h.max.Load()
}

// mean of the bucket midpoints, in nanoseconds.
func (h *histogram) mean() float64 {
	total := h.total.Load()
	if total == 0 {
		return -1
	}
	var sum float64
	for i := range h.counts {
		n := h.counts[i].Load()
		if n == 0 {
			continue
		}
		low := int64(0)
		if i > 0 {
			low = upperEdge(i-1) + 1
		}
		sum += float64(n) * float64(low+upperEdge(i)) / 2
	}
	return sum / float64(total)
}
