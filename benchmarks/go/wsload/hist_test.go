package main

import (
	"math/rand"
	"sort"
	"testing"
)

func TestBucketsAreContiguous(t *testing.T) {
	for v := int64(0); v < 1<<22; v++ {
		i := bucketOf(v)
		if v > upperEdge(i) || (i > 0 && v <= upperEdge(i-1)) {
			t.Fatalf("value %d in bucket %d [%d, %d]", v, i, upperEdge(i-1)+1, upperEdge(i))
		}
	}
	if got := bucketOf(1<<63 - 1); got != len(newHistogram().counts)-1 {
		t.Fatalf("largest value in bucket %d, want the last one", got)
	}
}

func TestQuantilesWithinPrecision(t *testing.T) {
	h := newHistogram()
	rng := rand.New(rand.NewSource(1))
	values := make([]int64, 100000)
	for i := range values {
		values[i] = int64(rng.ExpFloat64() * 200e3) // around 0.2 ms
		h.record(values[i])
	}
	sort.Slice(values, func(a, b int) bool { return values[a] < values[b] })
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := values[int(q*float64(len(values)))-1]
		got := h.quantile(q)
		if diff := float64(got-exact) / float64(exact); diff < -0.002 || diff > 0.002 {
			t.Errorf("q%.3f: %d, exact %d", q, got, exact)
		}
	}
	if h.quantile(1) != values[len(values)-1] {
		t.Errorf("q1 %d, max %d", h.quantile(1), values[len(values)-1])
	}
}
