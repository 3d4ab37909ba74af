package fgd

import (
	"testing"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
)

// BenchmarkNodeScore: one 8-GPU node, part used, against OpenB's 35 default shapes — the
// per-node cost of AcoFGD's Score (go test -bench . ./plugins/fgd).
func BenchmarkNodeScore(b *testing.B) {
	shapes := loadVectorsB(b).ShapeSets["openbDefault"]
	free := []uint32{1000, 190, 1000, 0, 530, 1000, 1000, 680}
	for _, bc := range []struct {
		name string
		pod  fragmentation.Pod
	}{
		{"share", fragmentation.Pod{CPUMilli: 3152, NumGPU: 1, GPUMilli: 470}},
		{"whole", fragmentation.Pod{CPUMilli: 11300, NumGPU: 2, GPUMilli: 1000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				NodeScore(64000, free, "V100M32", bc.pod, shapes)
			}
		})
	}
}
