package fgd

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
	"github.com/aco-edge-extender/kube-tools/plugins/gpudevices"
)

func register(gpus int) string {
	text := ""
	for i := 0; i < gpus; i++ {
		text += fmt.Sprintf("g%d,10,16000,100,x,0,true:", i)
	}
	return text
}

func testNode(name, model string, gpus int, cpu string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{gpudevices.GPUModelLabel: model},
			Annotations: map[string]string{gpudevices.NodeRegisterAnnotation: register(gpus)},
		},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}},
	}
}

func cpuPod(name, node, cpu string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
}

// TestScoreIsNodeScoreOfTheNodesState: the plugin's Score — free CPU from the NodeInfo, free
// shares from the device cache, the model from the label, the per-cycle memo — gives for each
// node what NodeScore gives for its state, also for nodes in equal states but of other models
// when a shape names models (the memo must tell them apart).
func TestScoreIsNodeScoreOfTheNodesState(t *testing.T) {
	shapes := []fragmentation.Shape{
		{CPUMilli: 4000, NumGPU: 1, GPUMilli: 500, GPUModels: []string{"T4"}, Frequency: 0.5},
		{CPUMilli: 8000, NumGPU: 1, GPUMilli: 1000, Frequency: 0.3},
		{CPUMilli: 16000, Frequency: 0.2},
	}
	cache := gpudevices.NewCache()
	type nodeCase struct {
		node  *v1.Node
		used  string // cpu requested by pods on it
		alloc string // its pods' devices
	}
	cases := []nodeCase{
		{testNode("t4-a", "T4", 2, "32"), "4", "g0,NVIDIA,8000,50:;"},
		{testNode("t4-b", "T4", 2, "32"), "4", "g0,NVIDIA,8000,50:;"},
		{testNode("p100", "P100", 2, "32"), "4", "g0,NVIDIA,8000,50:;"},
		{testNode("idle", "T4", 2, "32"), "0", ""},
		{testNode("tight", "T4", 4, "10"), "6", "g1,NVIDIA,16000,100:g2,NVIDIA,3200,20:;"},
		{testNode("cpu", "", 0, "64"), "1", ""},
	}
	infos := map[string]*framework.NodeInfo{}
	for _, c := range cases {
		cache.SetNode(c.node)
		p := cpuPod("on-"+c.node.Name, c.node.Name, c.used)
		if c.alloc != "" {
			p.Annotations = map[string]string{gpudevices.PodAllocatedAnnotation: c.alloc}
			cache.SetPod(p)
		}
		info := framework.NewNodeInfo(p)
		info.SetNode(c.node)
		infos[c.node.Name] = info
	}
	plugin := NewWith(cache, shapes)
	for _, ask := range []fragmentation.Pod{
		{CPUMilli: 2000, NumGPU: 1, GPUMilli: 500},
		{CPUMilli: 2000, NumGPU: 1, GPUMilli: 1000},
		{CPUMilli: 3000},
	} {
		pod := cpuPod("p", "", fmt.Sprintf("%dm", ask.CPUMilli))
		if ask.NumGPU > 0 {
			res := v1.ResourceList{gpudevices.GPUMilliResource: *resource.NewQuantity(int64(ask.GPUMilli*ask.NumGPU), resource.DecimalSI)}
			pod.Spec.Containers[0].Resources.Requests[gpudevices.GPUMilliResource] = res[gpudevices.GPUMilliResource]
			pod.Spec.Containers[0].Resources.Limits = res
		}
		state := framework.NewCycleState()
		if st := plugin.PreScore(context.Background(), state, pod, nil); !st.IsSuccess() {
			t.Fatal(st)
		}
		for round := 0; round < 2; round++ { // the second round is served by the memo
			for _, c := range cases {
				got, st := plugin.Score(context.Background(), state, pod, infos[c.node.Name])
				if !st.IsSuccess() {
					t.Fatal(st)
				}
				free, _ := cache.Free(c.node.Name)
				cpuFree := infos[c.node.Name].GetAllocatable().GetMilliCPU() - infos[c.node.Name].GetRequested().GetMilliCPU()
				want := NodeScore(cpuFree, free, c.node.Labels[gpudevices.GPUModelLabel], ask, shapes)
				if got != want {
					t.Errorf("%+v on %s (round %d): %d, want %d", ask, c.node.Name, round, got, want)
				}
			}
		}
		// Equal states of different models differ here: the memo did not merge them.
		a, _ := plugin.Score(context.Background(), state, pod, infos["t4-a"])
		p, _ := plugin.Score(context.Background(), state, pod, infos["p100"])
		if ask.NumGPU == 1 && ask.GPUMilli == 500 && a == p {
			t.Errorf("T4 and P100 nodes in one state scored alike (%d): the model-constrained shape was ignored", a)
		}
	}
}
