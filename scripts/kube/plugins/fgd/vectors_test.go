package fgd

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
	"github.com/aco-edge-extender/kube-tools/plugins/gpudevices"
)

// vectors is testdata/vectors.json, written by crates/sim/tests/fgd_vectors.rs from the Rust
// FGD (the simulator's reference).
type vectors struct {
	ShapeSets map[string][]fragmentation.Shape `json:"shapeSets"`
	Cases     []vectorCase                     `json:"cases"`
}

type vectorCase struct {
	Shapes string `json:"shapes"`
	Node   struct {
		Model   *string  `json:"model"`
		CPUFree int64    `json:"cpuFree"`
		GPUFree []uint32 `json:"gpuFree"`
	} `json:"node"`
	Pod struct {
		CPUMilli int64  `json:"cpuMilli"`
		NumGPU   uint32 `json:"numGpu"`
		GPUMilli uint32 `json:"gpuMilli"`
	} `json:"pod"`
	FragmentationBefore float64  `json:"fragmentationBefore"`
	Fits                bool     `json:"fits"`
	DevicesFit          bool     `json:"devicesFit"`
	Delta               *float64 `json:"delta"`
	Score               int64    `json:"score"`
	BestGradient        *struct {
		Delta float64 `json:"delta"`
		GPUs  []int   `json:"gpus"`
	} `json:"bestGradient"`
	ShareGPUFirstBestScore *int             `json:"shareGpuFirstBestScore"`
	ShareGPUBestFit        *int             `json:"shareGpuBestFit"`
	ShareDeltas            [][2]json.Number `json:"shareDeltas"`
}

func loadVectors(t *testing.T) vectors { return loadVectorsB(t) }

func loadVectorsB(t testing.TB) vectors {
	t.Helper()
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 100 {
		t.Fatalf("only %d vectors", len(v.Cases))
	}
	return v
}

const tolerance = 1e-9

func close(a, b float64) bool { return math.Abs(a-b) <= tolerance }

// TestVectorsEqualTheRustFGD: every vector's F, ΔF, integer score, share GPU of each choice,
// gradient per GPU and device fit as the simulator gives them.
func TestVectorsEqualTheRustFGD(t *testing.T) {
	v := loadVectors(t)
	for i, c := range v.Cases {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			shapes, ok := v.ShapeSets[c.Shapes]
			if !ok {
				t.Fatalf("no shape set %q", c.Shapes)
			}
			model := ""
			if c.Node.Model != nil {
				model = *c.Node.Model
			}
			pod := fragmentation.Pod{CPUMilli: c.Pod.CPUMilli, NumGPU: c.Pod.NumGPU, GPUMilli: c.Pod.GPUMilli}
			cpu, free := c.Node.CPUFree, c.Node.GPUFree
			if f := fragmentation.Fragmentation(cpu, free, model, shapes); !close(f, c.FragmentationBefore) {
				t.Errorf("F = %v, Rust %v", f, c.FragmentationBefore)
			}

			delta, shareGPU, fits := fragmentation.Verdict(cpu, free, model, pod, shapes)
			if fits != c.Fits {
				t.Fatalf("fits = %v, Rust %v", fits, c.Fits)
			}
			if fits && !close(delta, *c.Delta) {
				t.Errorf("ΔF = %v, Rust %v", delta, *c.Delta)
			}
			if s := NodeScore(cpu, free, model, pod, shapes); s != c.Score {
				t.Errorf("score = %d, Rust %d", s, c.Score)
			}
			if c.ShareGPUFirstBestScore != nil && shareGPU != *c.ShareGPUFirstBestScore {
				t.Errorf("first-best-score GPU = %d, Rust %d", shareGPU, *c.ShareGPUFirstBestScore)
			}

			d, gpus, ok := fragmentation.Delta(cpu, free, model, pod, shapes)
			if ok != (c.BestGradient != nil) {
				t.Fatalf("Delta ok = %v, Rust %v", ok, c.BestGradient != nil)
			}
			if ok {
				if !close(d, c.BestGradient.Delta) {
					t.Errorf("best-gradient ΔF = %v, Rust %v", d, c.BestGradient.Delta)
				}
				if len(gpus)+len(c.BestGradient.GPUs) > 0 && !reflect.DeepEqual(gpus, c.BestGradient.GPUs) {
					t.Errorf("best-gradient GPUs = %v, Rust %v", gpus, c.BestGradient.GPUs)
				}
			}

			deltas := fragmentation.ShareDeltas(cpu, free, model, pod, shapes)
			if pod.IsShare() && !pod.IsCPUOnly() {
				if len(deltas) != len(c.ShareDeltas) {
					t.Fatalf("%d share deltas, Rust %d", len(deltas), len(c.ShareDeltas))
				}
				for j, want := range c.ShareDeltas {
					gpu, _ := want[0].Int64()
					d, _ := want[1].Float64()
					if deltas[j].GPU != int(gpu) || !close(deltas[j].Delta, d) {
						t.Errorf("share delta %d = %+v, Rust (%d, %v)", j, deltas[j], gpu, d)
					}
				}
			}

			checkChoices(t, c, pod, shapes, model)
		})
	}
}

// checkChoices: AcoGpuDevices' fit and its three share choices against the simulator's.
func checkChoices(t *testing.T, c vectorCase, pod fragmentation.Pod, shapes []fragmentation.Shape, model string) {
	t.Helper()
	free := c.Node.GPUFree
	if fit := gpudevices.Fits(free, pod) == ""; fit != c.DevicesFit {
		t.Fatalf("devices fit = %v, Rust %v", fit, c.DevicesFit)
	}
	if pod.IsCPUOnly() || !c.DevicesFit {
		return
	}
	n := gpudevices.NodeState{Free: free, CPUFree: c.Node.CPUFree, Model: model}
	bestFit := gpudevices.Choose(gpudevices.BestFit, n, pod, shapes)
	first := gpudevices.Choose(gpudevices.FGDFirstBestScore, n, pod, shapes)
	gradient := gpudevices.Choose(gpudevices.FGDBestGradient, n, pod, shapes)
	if !pod.IsShare() {
		want := fragmentation.FirstFreeGPUs(free, int(pod.NumGPU))
		if c.BestGradient != nil {
			want = c.BestGradient.GPUs
		}
		for name, got := range map[string][]int{"bestFit": bestFit, "fgdFirstBestScore": first, "fgdBestGradient": gradient} {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s whole GPUs = %v, want %v", name, got, want)
			}
		}
		return
	}
	if c.ShareGPUBestFit == nil || !reflect.DeepEqual(bestFit, []int{*c.ShareGPUBestFit}) {
		t.Errorf("bestFit = %v, Rust %v", bestFit, c.ShareGPUBestFit)
	}
	// Where FGD finds nothing (its CPU check), the FGD choices fall back to best fit.
	wantFirst, wantGradient := bestFit, bestFit
	if c.ShareGPUFirstBestScore != nil {
		wantFirst = []int{*c.ShareGPUFirstBestScore}
	}
	if c.BestGradient != nil {
		wantGradient = c.BestGradient.GPUs
	}
	if !reflect.DeepEqual(first, wantFirst) {
		t.Errorf("fgdFirstBestScore = %v, Rust %v", first, wantFirst)
	}
	if !reflect.DeepEqual(gradient, wantGradient) {
		t.Errorf("fgdBestGradient = %v, Rust %v", gradient, wantGradient)
	}
}

// TestVectorsCoverTheCases keeps the vector set from shrinking to easy cases.
func TestVectorsCoverTheCases(t *testing.T) {
	v := loadVectors(t)
	kinds := map[string]int{}
	for _, c := range v.Cases {
		share := c.Pod.NumGPU == 1 && c.Pod.GPUMilli > 0 && c.Pod.GPUMilli < 1000
		switch {
		case c.Pod.NumGPU == 0:
			kinds["cpu-only"]++
		case share && c.Fits:
			kinds["share"]++
		case c.Pod.NumGPU > 1 && c.Fits:
			kinds["multi-gpu"]++
		}
		if !c.Fits {
			kinds["not fitting"]++
		}
		if c.Shapes == "constrained" && c.Node.Model != nil {
			kinds["model-constrained shapes"]++
		}
		if share && c.ShareGPUFirstBestScore != nil && c.BestGradient.GPUs[0] != *c.ShareGPUFirstBestScore {
			kinds["first-best-score differs from best gradient"]++
		}
	}
	for _, k := range []string{"cpu-only", "share", "multi-gpu", "not fitting", "model-constrained shapes", "first-best-score differs from best gradient"} {
		if kinds[k] < 3 {
			t.Errorf("%d vectors of %s", kinds[k], k)
		}
	}
}
