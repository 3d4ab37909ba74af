// Package gpudevices is AcoGpuDevices, a kube-scheduler plugin that accounts GPUs per device,
// the stand-in for HAMi's scheduler extender in the real-kube replay (see README.md beside this
// package). NodeResourcesFit sees only a node's aggregate GPU resources; this plugin keeps,
// per physical GPU, what is free (Cache), filters nodes on it, picks the device(s) a pod takes
// at Reserve, and writes them on the pod at PreBind in the annotation HAMi writes
// (hami.io/vgpu-devices-allocated), which the reporter reads to give the Worker per-GPU free
// shares. Devices come from the node annotation HAMi's device plugin writes
// (hami.io/node-nvidia-register); here the harness writes it.
//
// It implements no SignPlugin on purpose: its verdicts depend on the device cache, not only on
// the NodeInfo kube-scheduler signs, so pods must not share a batch's results.
package gpudevices

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "AcoGpuDevices"

const stateKey fwk.StateKey = Name

// Plugin is AcoGpuDevices for one profile.
type Plugin struct {
	handle fwk.Handle
	cache  *Cache
	args   Args
}

var (
	_ fwk.PreFilterPlugin = &Plugin{}
	_ fwk.FilterPlugin    = &Plugin{}
	_ fwk.ReservePlugin   = &Plugin{}
	_ fwk.PreBindPlugin   = &Plugin{}
)

// New is the plugin factory kube-scheduler calls once per profile that enables it.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := ParseArgs(obj)
	if err != nil {
		return nil, err
	}
	c, err := Shared(h.SharedInformerFactory())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{handle: h, cache: c, args: args}, nil
}

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

// podState is what PreFilter read of the pod, for the rest of its cycle.
type podState struct {
	ask    fragmentation.Pod
	models []string
	// allocs is what Reserve assumed (PreBind writes it).
	allocs []Alloc
}

func (s *podState) Clone() fwk.StateData {
	c := *s
	c.allocs = append([]Alloc(nil), s.allocs...)
	return &c
}

func readState(state fwk.CycleState) (*podState, bool) {
	d, err := state.Read(stateKey)
	if err != nil {
		return nil, false
	}
	s, ok := d.(*podState)
	return s, ok
}

// PreFilter reads the pod's GPU ask; a pod asking for no GPU skips the plugin.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	ask := PodAsk(pod)
	if ask.IsCPUOnly() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if err := p.cache.WaitForSync(ctx); err != nil {
		return nil, fwk.AsStatus(err)
	}
	state.Write(stateKey, &podState{ask: ask, models: AllowedModels(pod)})
	return nil, nil
}

// PreFilterExtensions implements fwk.PreFilterPlugin: none (preemption's what-ifs are not
// accounted per device).
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter passes a node whose devices hold the pod's GPUs: a share needs one device with its milli
// free, k whole GPUs k entirely free devices; a pod naming GPU models needs a node of one of them.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, ok := readState(state)
	if !ok {
		return fwk.AsStatus(fmt.Errorf("%s: no PreFilter state", Name))
	}
	node := nodeInfo.Node()
	if s.models != nil && !modelAllowed(s.models, node.Labels[GPUModelLabel]) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("GPU model not among the pod's %s %v", GPUModelsAnnotation, s.models))
	}
	free, ok := p.cache.Free(node.Name)
	if !ok || len(free) == 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node registers no GPU devices ("+NodeRegisterAnnotation+")")
	}
	if why := Fits(free, s.ask); why != "" {
		return fwk.NewStatus(fwk.Unschedulable, why)
	}
	return nil
}

func modelAllowed(models []string, model string) bool {
	for _, m := range models {
		if m == model && model != "" {
			return true
		}
	}
	return false
}

// Reserve picks the pod's devices on nodeName (the profile's shareGpuChoice for a share) and
// assumes them in the cache.
func (p *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, ok := readState(state)
	if !ok {
		return nil // no GPU asked
	}
	n := NodeState{}
	if p.args.ShareGPUChoice.needsShapes() && s.ask.IsShare() {
		info, err := p.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("%s: %w", Name, err))
		}
		n.CPUFree = info.GetAllocatable().GetMilliCPU() - info.GetRequested().GetMilliCPU()
	}
	milli := s.ask.GPUMilli
	allocs, err := p.cache.Assume(pod.UID, nodeName, milli, func(v NodeView) []int {
		n.Free, n.Model = v.Free, v.Model
		return Choose(p.args.ShareGPUChoice, n, s.ask, p.args.TypicalShapes)
	})
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	s.allocs = allocs
	return nil
}

// Unreserve forgets the pod's assumed devices.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.cache.Forget(pod.UID)
}

// PreBindPreFlight skips pods that took no device.
func (p *Plugin) PreBindPreFlight(_ context.Context, state fwk.CycleState, _ *v1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if s, ok := readState(state); !ok || len(s.allocs) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
}

// PreBind writes the pod's devices on it (one merge patch), before the binding makes the
// placement visible.
func (p *Plugin) PreBind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, ok := readState(state)
	if !ok || len(s.allocs) == 0 {
		return nil
	}
	patch, err := allocationPatch(s.allocs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	_, err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("%s: writing %s on %s/%s: %w", Name, PodAllocatedAnnotation, pod.Namespace, pod.Name, err))
	}
	klog.FromContext(ctx).V(4).Info("GPU devices allocated", "pod", klog.KObj(pod), "node", nodeName, "devices", s.allocs)
	return nil
}

func allocationPatch(allocs []Alloc) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]string{PodAllocatedAnnotation: EncodeAllocated(allocs)},
		},
	})
}
