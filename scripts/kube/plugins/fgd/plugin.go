// Package fgd is AcoFGD, FGD (Weng et al., "Beware of Fragmentation", USENIX ATC '23) as a
// kube-scheduler score plugin: a node's score is int(sigmoid(ΔF/1000) × 100), ΔF the
// fragmentation the placement removes (package fragmentation, equal to the simulator's FGD:
// see the equivalence vectors in testdata/). Per-device free shares come from AcoGpuDevices'
// cache in the same process, the node's GPU model from its alibabacloud.com/gpu-card-model
// label, free CPU from kube-scheduler's NodeInfo (allocatable − requested, pods assumed but not
// bound included), the typical shapes from the plugin's args. See README.md beside the
// plugins for the profile to run it in.
package fgd

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
	"github.com/aco-edge-extender/kube-tools/plugins/gpudevices"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "AcoFGD"

const stateKey fwk.StateKey = Name

// Args are AcoFGD's pluginConfig args.
type Args struct {
	// TypicalShapes: the workload's typical pod shapes with their frequencies (the harness
	// computes them from the trace with the simulator's rule, typical_shapes).
	TypicalShapes []fragmentation.Shape `json:"typicalShapes"`
}

// ParseArgs decodes and checks AcoFGD's args.
func ParseArgs(obj runtime.Object) (Args, error) {
	var args Args
	if err := gpudevices.DecodeStrict(obj, &args); err != nil {
		return args, fmt.Errorf("%s args: %w", Name, err)
	}
	if err := fragmentation.ValidateShapes("typicalShapes", args.TypicalShapes); err != nil {
		return args, fmt.Errorf("%s args: %w", Name, err)
	}
	return args, nil
}

// Plugin is AcoFGD for one profile.
type Plugin struct {
	cache  *gpudevices.Cache
	shapes []fragmentation.Shape
}

var (
	_ fwk.PreScorePlugin = &Plugin{}
	_ fwk.ScorePlugin    = &Plugin{}
)

// New is the plugin factory kube-scheduler calls once per profile that enables it.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := ParseArgs(obj)
	if err != nil {
		return nil, err
	}
	c, err := gpudevices.Shared(h.SharedInformerFactory())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{cache: c, shapes: args.TypicalShapes}, nil
}

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

type podState struct{ ask fragmentation.Pod }

func (s *podState) Clone() fwk.StateData { return s }

// PreScore reads the pod's ask once per cycle.
func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if err := p.cache.WaitForSync(ctx); err != nil {
		return fwk.AsStatus(err)
	}
	state.Write(stateKey, &podState{ask: gpudevices.PodAsk(pod)})
	return nil
}

// Score is FGD's score of the node (0 when the pod does not fit it).
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	ask := gpudevices.PodAsk(pod)
	if d, err := state.Read(stateKey); err == nil {
		ask = d.(*podState).ask
	}
	node := nodeInfo.Node()
	cpuFree := nodeInfo.GetAllocatable().GetMilliCPU() - nodeInfo.GetRequested().GetMilliCPU()
	view, _ := p.cache.View(node.Name)
	return NodeScore(cpuFree, view.Free, node.Labels[gpudevices.GPUModelLabel], ask, p.shapes), nil
}

// NodeScore is FGD's integer score of placing ask on a node in this state: 0 when it does not
// fit, as the simulator's FGD policy scores such a candidate.
func NodeScore(cpuFree int64, gpuFree []uint32, model string, ask fragmentation.Pod, shapes []fragmentation.Shape) int64 {
	delta, _, ok := fragmentation.Verdict(cpuFree, gpuFree, model, ask, shapes)
	if !ok {
		return 0
	}
	return fragmentation.Score(delta)
}

// ScoreExtensions implements fwk.ScorePlugin: scores are already 0–100.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
