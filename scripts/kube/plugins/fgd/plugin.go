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
	"strconv"
	"strings"
	"sync"

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
	// modelsMatter: some shape names GPU models, so a node's model is part of its state.
	modelsMatter bool
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
	return NewWith(c, args.TypicalShapes), nil
}

// NewWith is AcoFGD over cache with shapes.
func NewWith(c *gpudevices.Cache, shapes []fragmentation.Shape) *Plugin {
	p := &Plugin{cache: c, shapes: shapes}
	for _, s := range shapes {
		p.modelsMatter = p.modelsMatter || s.GPUModels != nil
	}
	return p
}

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

// podState is one pod's scoring cycle: its ask, and the score of each distinct node state met
// (many nodes of a cluster are in the same state — idle ones of one shape above all — and the
// gradient over the typical shapes is the costly part: ~10 µs for an 8-GPU node against
// OpenB's 35 shapes). Score runs in parallel over the nodes, hence the lock.
type podState struct {
	ask fragmentation.Pod
	mu  sync.Mutex
	// memo: state key → score; the same inputs give the same score, so a hit is exact.
	memo map[string]int64
}

// Clone shares the state: the pod and its memo stay valid for any copy of the cycle.
func (s *podState) Clone() fwk.StateData { return s }

// PreScore reads the pod's ask once per cycle.
func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if err := p.cache.WaitForSync(ctx); err != nil {
		return fwk.AsStatus(err)
	}
	state.Write(stateKey, &podState{ask: gpudevices.PodAsk(pod), memo: map[string]int64{}})
	return nil
}

// Score is FGD's score of the node (0 when the pod does not fit it).
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	node := nodeInfo.Node()
	cpuFree := nodeInfo.GetAllocatable().GetMilliCPU() - nodeInfo.GetRequested().GetMilliCPU()
	free, _ := p.cache.Free(node.Name)
	model := node.Labels[gpudevices.GPUModelLabel]
	d, err := state.Read(stateKey)
	if err != nil {
		// No PreScore (a cycle that skipped it): compute without the memo.
		return NodeScore(cpuFree, free, model, gpudevices.PodAsk(pod), p.shapes), nil
	}
	s := d.(*podState)
	key := p.stateKey(cpuFree, free, model)
	s.mu.Lock()
	score, ok := s.memo[key]
	s.mu.Unlock()
	if !ok {
		score = NodeScore(cpuFree, free, model, s.ask, p.shapes)
		s.mu.Lock()
		s.memo[key] = score
		s.mu.Unlock()
	}
	return score, nil
}

// stateKey is what FGD's answer depends on: free CPU, free milli per GPU, and the GPU model
// where some shape names models.
func (p *Plugin) stateKey(cpuFree int64, free []uint32, model string) string {
	var b strings.Builder
	if p.modelsMatter {
		b.WriteString(model)
	}
	b.WriteByte('|')
	b.WriteString(strconv.FormatInt(cpuFree, 10))
	for _, f := range free {
		b.WriteByte(',')
		b.WriteString(strconv.FormatUint(uint64(f), 10))
	}
	return b.String()
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
