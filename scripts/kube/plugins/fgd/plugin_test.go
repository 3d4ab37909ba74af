package fgd

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
)

func TestParseArgs(t *testing.T) {
	ok := `{"typicalShapes":[{"cpuMilli":4000,"numGpu":1,"gpuMilli":500,"gpuModels":["T4"],"frequency":0.5},{"cpuMilli":8000,"numGpu":0,"gpuMilli":0,"gpuModels":null,"frequency":0.5}]}`
	args, err := ParseArgs(&runtime.Unknown{Raw: []byte(ok)})
	if err != nil {
		t.Fatal(err)
	}
	want := []fragmentation.Shape{
		{CPUMilli: 4000, NumGPU: 1, GPUMilli: 500, GPUModels: []string{"T4"}, Frequency: 0.5},
		{CPUMilli: 8000, Frequency: 0.5},
	}
	if len(args.TypicalShapes) != 2 || args.TypicalShapes[0].GPUModels[0] != "T4" || args.TypicalShapes[1].GPUModels != nil ||
		args.TypicalShapes[0].Frequency != want[0].Frequency || args.TypicalShapes[1].CPUMilli != want[1].CPUMilli {
		t.Errorf("got %+v", args.TypicalShapes)
	}
	for text, field := range map[string]string{
		``:                                    "typicalShapes: empty",
		`{"typicalShapes":[]}`:                "typicalShapes: empty",
		`{"shapes":[]}`:                       `unknown field "shapes"`,
		`{"typicalShapes":[{"frequency":0}]}`: "frequencies sum to 0",
		`{"typicalShapes":[{"numGpu":2,"gpuMilli":500,"frequency":1}]}`: "typicalShapes[0].gpuMilli",
	} {
		var obj runtime.Object
		if text != "" {
			obj = &runtime.Unknown{Raw: []byte(text)}
		}
		if _, err := ParseArgs(obj); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v, want one naming %q", text, err, field)
		}
	}
}

func TestNodeScore(t *testing.T) {
	shapes := []fragmentation.Shape{{CPUMilli: 1000, NumGPU: 1, GPUMilli: 500, Frequency: 1}}
	share := fragmentation.Pod{CPUMilli: 1000, NumGPU: 1, GPUMilli: 500}
	// A node without GPUs has no fragments to add or remove: sigmoid(0) = 0.5.
	if got := NodeScore(8000, nil, "", fragmentation.Pod{CPUMilli: 1000}, shapes); got != 50 {
		t.Errorf("CPU pod on a CPU node: %d", got)
	}
	// Not fitting scores 0, as the simulator's FGD scores such a candidate.
	if got := NodeScore(8000, []uint32{400}, "", share, shapes); got != 0 {
		t.Errorf("not fitting: %d", got)
	}
	if got := NodeScore(500, []uint32{1000}, "", share, shapes); got != 0 {
		t.Errorf("CPU not fitting: %d", got)
	}
	// With whole-GPU pods half the workload, filling a half-used GPU removes a 500 fragment
	// for them (ΔF = +250, sigmoid 0.562), splitting an idle one makes it (ΔF = −250, 0.438).
	shapes = append(shapes, fragmentation.Shape{CPUMilli: 1000, NumGPU: 1, GPUMilli: 1000, Frequency: 1})
	shapes[0].Frequency, shapes[1].Frequency = 0.5, 0.5
	filling, splitting := NodeScore(8000, []uint32{500}, "", share, shapes), NodeScore(8000, []uint32{1000}, "", share, shapes)
	if filling != 56 || splitting != 43 {
		t.Errorf("filling %d, splitting %d", filling, splitting)
	}
}
