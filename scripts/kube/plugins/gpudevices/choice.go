package gpudevices

import (
	"fmt"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
)

// ShareGPUChoice is which GPU a share takes among those with room.
type ShareGPUChoice string

const (
	// BestFit: the GPU with the least free milli that fits, lowest index on ties (what
	// gpushare's and HAMi's binpack policies do; the simulator's device plugin default).
	BestFit ShareGPUChoice = "bestFit"
	// FGDFirstBestScore: the first GPU of the best integer FGD score (the ATC '23 authors'
	// calculateGpuShareFragExtendScore; the simulator's FGD policy).
	FGDFirstBestScore ShareGPUChoice = "fgdFirstBestScore"
	// FGDBestGradient: the GPU of the best unrounded ΔF, lowest index on ties (the simulator's
	// colony and aco-core's fragmentation_delta).
	FGDBestGradient ShareGPUChoice = "fgdBestGradient"
)

func (c ShareGPUChoice) valid() bool {
	return c == BestFit || c == FGDFirstBestScore || c == FGDBestGradient
}

func (c ShareGPUChoice) needsShapes() bool { return c == FGDFirstBestScore || c == FGDBestGradient }

// NodeState is what a choice reads of a node: free milli per device (0 for a device that cannot
// take allocations), free milli-CPU and the GPU model.
type NodeState struct {
	Free    []uint32
	CPUFree int64
	Model   string
}

// Fits says why pod's GPUs do not fit the devices ("" when they fit): a share needs one device
// with at least its milli free, k whole GPUs k entirely free devices. The reason names no node
// state: kube-scheduler counts identical reasons over the nodes into one line per reason.
func Fits(free []uint32, pod fragmentation.Pod) string {
	if pod.IsCPUOnly() {
		return ""
	}
	if pod.IsShare() {
		for _, f := range free {
			if f >= pod.GPUMilli {
				return ""
			}
		}
		return fmt.Sprintf("no GPU with %d milli free", pod.GPUMilli)
	}
	whole := 0
	for _, f := range free {
		if f >= 1000 {
			whole++
		}
	}
	if whole < int(pod.NumGPU) {
		return fmt.Sprintf("fewer than %d GPUs wholly free", pod.NumGPU)
	}
	return ""
}

// Choose picks the devices pod takes on a node in state n (indices into n.Free), nil when they
// do not fit. Whole GPUs: the lowest-index entirely free ones. A share: by choice; the FGD
// choices read shapes, and fall back to best fit where FGD finds nothing (its CPU check failing
// on a node kube-scheduler's own fit passed).
func Choose(choice ShareGPUChoice, n NodeState, pod fragmentation.Pod, shapes []fragmentation.Shape) []int {
	if pod.IsCPUOnly() || Fits(n.Free, pod) != "" {
		return nil
	}
	if !pod.IsShare() {
		return fragmentation.FirstFreeGPUs(n.Free, int(pod.NumGPU))
	}
	switch choice {
	case FGDFirstBestScore:
		if gpu, _, ok := fragmentation.FirstBestScoreGPU(n.CPUFree, n.Free, n.Model, pod, shapes); ok {
			return []int{gpu}
		}
	case FGDBestGradient:
		if _, gpus, ok := fragmentation.Delta(n.CPUFree, n.Free, n.Model, pod, shapes); ok {
			return gpus
		}
	}
	return []int{bestFitGPU(n.Free, pod.GPUMilli)}
}

// bestFitGPU is the device with the least free milli of at least milli, lowest index on ties
// (-1: none).
func bestFitGPU(free []uint32, milli uint32) int {
	best := -1
	for i, f := range free {
		if f >= milli && (best < 0 || f < free[best]) {
			best = i
		}
	}
	return best
}
