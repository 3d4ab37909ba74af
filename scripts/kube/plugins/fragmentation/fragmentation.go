// Package fragmentation is FGD's fragmentation measure (Weng et al., "Beware of Fragmentation",
// USENIX ATC '23) in Go, written to give the answers of the project's Rust reference
// (crates/core/src/heuristic/fragmentation.rs: fragmentation, fragmentation_delta,
// share_deltas, sigmoid_score; crates/sim/src/saturate/policy/fgd.rs: fgd_score and the
// share GPU choices). Pure: no Kubernetes types, no I/O, so the equivalence vectors the Rust
// side writes (../fgd/testdata) check it directly.
//
// A node's fragmentation F(n) is measured against the workload's typical pod shapes: for each
// shape, the idle milli-GPU of the node the shape could not use — all of it when the shape does
// not fit (too little CPU, not enough GPUs with room, a CPU-only shape, or a shape that names
// GPU models the node's model is not among), else the idle milli on GPUs whose free share is
// below the shape's per-GPU request — weighted by frequency. A placement's gradient is
// ΔF = F(before) − F(after); FGD scores int(sigmoid(ΔF/1000) × 100).
package fragmentation

import "math"

// Shape is one typical pod shape and its frequency (the frequencies of a list sum to 1).
type Shape struct {
	CPUMilli int64 `json:"cpuMilli"`
	// NumGPU is 0 for CPU-only shapes.
	NumGPU uint32 `json:"numGpu"`
	// GPUMilli is per GPU: 1000 for whole GPUs, less for a share (then NumGPU is 1).
	GPUMilli uint32 `json:"gpuMilli"`
	// GPUModels are the GPU models the shape may run on; nil: any model.
	GPUModels []string `json:"gpuModels"`
	Frequency float64  `json:"frequency"`
}

// AcceptsModel reports whether the shape may use the GPUs of a node of nodeModel ("" = the
// node has no GPU-model label, which no constrained shape accepts).
func (s Shape) AcceptsModel(nodeModel string) bool {
	if s.GPUModels == nil {
		return true
	}
	if nodeModel == "" {
		return false
	}
	for _, m := range s.GPUModels {
		if m == nodeModel {
			return true
		}
	}
	return false
}

// Pod is the pod to place as FGD sees it.
type Pod struct {
	CPUMilli int64
	// NumGPU is 0 for a CPU-only pod.
	NumGPU uint32
	// GPUMilli is per GPU (1000 = whole GPUs).
	GPUMilli uint32
}

// IsShare reports whether the pod takes part of one GPU.
func (p Pod) IsShare() bool { return p.NumGPU == 1 && p.GPUMilli < 1000 }

// IsCPUOnly reports whether the pod uses no GPU.
func (p Pod) IsCPUOnly() bool { return p.NumGPU == 0 || p.GPUMilli == 0 }

// Fragmentation is F(n) in milli-GPU of a node of GPU model nodeModel with cpuFree milli-CPU
// and gpuFree milli-GPU free per physical GPU, against shapes.
func Fragmentation(cpuFree int64, gpuFree []uint32, nodeModel string, shapes []Shape) float64 {
	var idle uint32
	for _, g := range gpuFree {
		idle += g
	}
	if idle == 0 {
		return 0
	}
	f := 0.0
	for _, s := range shapes {
		if s.NumGPU == 0 || s.GPUMilli == 0 || !s.AcceptsModel(nodeModel) {
			f += s.Frequency * float64(idle)
			continue
		}
		room := 0
		var small uint32
		for _, g := range gpuFree {
			if g >= s.GPUMilli {
				room++
			} else {
				small += g
			}
		}
		if room >= int(s.NumGPU) && cpuFree >= s.CPUMilli {
			f += s.Frequency * float64(small)
		} else {
			f += s.Frequency * float64(idle)
		}
	}
	return f
}

// GPUDelta is the gradient of putting a share on one GPU.
type GPUDelta struct {
	GPU   int
	Delta float64
}

// ShareDeltas lists, for a share, (GPU index, ΔF) of putting it on each GPU with room, in index
// order. Empty when the CPU or no GPU fits.
func ShareDeltas(cpuFree int64, gpuFree []uint32, nodeModel string, pod Pod, shapes []Shape) []GPUDelta {
	if cpuFree < pod.CPUMilli {
		return nil
	}
	before := Fragmentation(cpuFree, gpuFree, nodeModel, shapes)
	cpuAfter := cpuFree - pod.CPUMilli
	after := append([]uint32(nil), gpuFree...)
	var out []GPUDelta
	for i := range gpuFree {
		if gpuFree[i] < pod.GPUMilli {
			continue
		}
		after[i] -= pod.GPUMilli
		out = append(out, GPUDelta{GPU: i, Delta: before - Fragmentation(cpuAfter, after, nodeModel, shapes)})
		after[i] += pod.GPUMilli
	}
	return out
}

// Delta is ΔF = F(before) − F(after) of placing pod on the node, with the GPUs FGD takes: a
// share the GPU of the largest ΔF (lowest index on ties), whole GPUs the first fully free ones,
// a CPU-only pod none. ok is false when the pod does not fit (CPU or GPUs; the GPU model is the
// fit check's business).
func Delta(cpuFree int64, gpuFree []uint32, nodeModel string, pod Pod, shapes []Shape) (delta float64, gpus []int, ok bool) {
	if cpuFree < pod.CPUMilli {
		return 0, nil, false
	}
	if pod.IsShare() && !pod.IsCPUOnly() {
		best := -1
		for _, d := range ShareDeltas(cpuFree, gpuFree, nodeModel, pod, shapes) {
			if best < 0 || d.Delta > delta {
				best, delta = d.GPU, d.Delta
			}
		}
		if best < 0 {
			return 0, nil, false
		}
		return delta, []int{best}, true
	}
	before := Fragmentation(cpuFree, gpuFree, nodeModel, shapes)
	cpuAfter := cpuFree - pod.CPUMilli
	after := append([]uint32(nil), gpuFree...)
	if pod.IsCPUOnly() {
		return before - Fragmentation(cpuAfter, after, nodeModel, shapes), nil, true
	}
	free := FirstFreeGPUs(gpuFree, int(pod.NumGPU))
	if free == nil {
		return 0, nil, false
	}
	for _, i := range free {
		after[i] = 0
	}
	return before - Fragmentation(cpuAfter, after, nodeModel, shapes), free, true
}

// FirstFreeGPUs is the k lowest-index fully free GPUs, nil when fewer are free.
func FirstFreeGPUs(gpuFree []uint32, k int) []int {
	free := make([]int, 0, k)
	for i, g := range gpuFree {
		if len(free) == k {
			break
		}
		if g >= 1000 {
			free = append(free, i)
		}
	}
	if len(free) < k {
		return nil
	}
	return free
}

// SigmoidScore is FGD's score of a gradient, in (0, 1).
func SigmoidScore(deltaMilli float64) float64 {
	return 1 / (1 + math.Exp(-deltaMilli/1000))
}

// MaxNodeScore is kube-scheduler's (and the authors' simulator's) top node score.
const MaxNodeScore = 100

// Score is FGD's integer node score of a gradient, 0–100, truncated as the authors' Go does.
func Score(delta float64) int64 {
	return int64(SigmoidScore(delta) * MaxNodeScore)
}

// FirstBestScoreGPU is the GPU a share takes under the authors' FGD
// (calculateGpuShareFragExtendScore): the first GPU of the best integer score, with its ΔF.
// ok is false when the share does not fit.
func FirstBestScoreGPU(cpuFree int64, gpuFree []uint32, nodeModel string, pod Pod, shapes []Shape) (gpu int, delta float64, ok bool) {
	var best int64 = -1
	for _, d := range ShareDeltas(cpuFree, gpuFree, nodeModel, pod, shapes) {
		if s := Score(d.Delta); s > best {
			best, gpu, delta = s, d.GPU, d.Delta
		}
	}
	return gpu, delta, best >= 0
}

// Verdict is FGD's answer for one node, as the simulator's FGD policy gives it
// (crates/sim/src/saturate/policy/fgd.rs state_verdict with ShareGpu::FirstBestScore): the
// gradient and, for a share, the first GPU of the best integer score; ok is false when the pod
// does not fit.
func Verdict(cpuFree int64, gpuFree []uint32, nodeModel string, pod Pod, shapes []Shape) (delta float64, shareGPU int, ok bool) {
	if pod.IsShare() && !pod.IsCPUOnly() {
		gpu, d, ok := FirstBestScoreGPU(cpuFree, gpuFree, nodeModel, pod, shapes)
		return d, gpu, ok
	}
	d, _, ok := Delta(cpuFree, gpuFree, nodeModel, pod, shapes)
	return d, -1, ok
}
