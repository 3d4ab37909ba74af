package gpudevices

import (
	"reflect"
	"testing"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
)

func share(m uint32) fragmentation.Pod {
	return fragmentation.Pod{CPUMilli: 1000, NumGPU: 1, GPUMilli: m}
}
func whole(k uint32) fragmentation.Pod {
	return fragmentation.Pod{CPUMilli: 1000, NumGPU: k, GPUMilli: 1000}
}

func TestFits(t *testing.T) {
	for _, tc := range []struct {
		free []uint32
		pod  fragmentation.Pod
		fits bool
	}{
		{[]uint32{600}, share(600), true},
		{[]uint32{599}, share(600), false},
		// 0.46 of a GPU never fits across two half-used GPUs.
		{[]uint32{300, 300}, share(460), false},
		{[]uint32{1000, 999, 1000}, whole(2), true},
		{[]uint32{1000, 999, 1000}, whole(3), false},
		{nil, whole(1), false},
		{nil, fragmentation.Pod{CPUMilli: 1}, true},
	} {
		if got := Fits(tc.free, tc.pod) == ""; got != tc.fits {
			t.Errorf("Fits(%v, %+v) = %v (%q)", tc.free, tc.pod, got, Fits(tc.free, tc.pod))
		}
	}
}

func TestChoose(t *testing.T) {
	// Half the workload shares of 500, half whole GPUs: filling the half-used GPU removes a
	// fragment, splitting an idle one makes one.
	shapes := []fragmentation.Shape{
		{CPUMilli: 1000, NumGPU: 1, GPUMilli: 500, Frequency: 0.5},
		{CPUMilli: 1000, NumGPU: 1, GPUMilli: 1000, Frequency: 0.5},
	}
	n := func(free ...uint32) NodeState { return NodeState{Free: free, CPUFree: 64000} }
	for _, tc := range []struct {
		name   string
		choice ShareGPUChoice
		node   NodeState
		pod    fragmentation.Pod
		want   []int
	}{
		{"best fit: least free that fits", BestFit, n(1000, 300, 700, 500), share(500), []int{3}},
		{"best fit: lowest index on ties", BestFit, n(1000, 600, 600), share(500), []int{1}},
		{"whole GPUs: lowest-index free ones", BestFit, n(0, 1000, 500, 1000, 1000), whole(2), []int{1, 3}},
		{"whole GPUs whatever the choice", FGDFirstBestScore, n(0, 1000, 500, 1000, 1000), whole(2), []int{1, 3}},
		{"FGD fills the half-used GPU", FGDBestGradient, n(1000, 500), share(500), []int{1}},
		{"FGD first best score fills it too", FGDFirstBestScore, n(1000, 500), share(500), []int{1}},
		{"not fitting", BestFit, n(400, 300), share(500), nil},
		{"CPU only takes no device", BestFit, n(1000), fragmentation.Pod{CPUMilli: 1}, nil},
		{"FGD finding no CPU falls back to best fit", FGDBestGradient, NodeState{Free: []uint32{1000, 700}}, share(500), []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Choose(tc.choice, tc.node, tc.pod, shapes); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
