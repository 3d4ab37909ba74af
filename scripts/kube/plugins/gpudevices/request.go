package gpudevices

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
)

// The resources a pod asks GPUs with, as the OpenB trace and aco-core read them
// (crates/core/src/heuristic/mod.rs pod_gpus): a share is `gpu-milli: m` (m < 1000); whole GPUs
// are a count in any of the whole-GPU resources (a `gpu-milli` of k×1000 beside it is ignored,
// and k×1000 alone also means k whole GPUs).
const (
	GPUMilliResource  = v1.ResourceName("alibabacloud.com/gpu-milli")
	GPUCountResource  = v1.ResourceName("alibabacloud.com/gpu-count")
	NvidiaGPUResource = v1.ResourceName("nvidia.com/gpu")
)

var wholeGPUResources = []v1.ResourceName{GPUCountResource, NvidiaGPUResource}

// The GPU models a pod may use and a node's model: the project's pod annotation
// (GPU_MODELS_ANNOTATION's default in aco-core, `V100M16|V100M32`) and OpenB's node label.
const (
	GPUModelsAnnotation = "scheduling.aco/gpu-models"
	GPUModelLabel       = "alibabacloud.com/gpu-card-model"
)

// PodAsk is the pod as FGD and the device accounting see it: CPU and GPUs.
func PodAsk(pod *v1.Pod) fragmentation.Pod {
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	ask := fragmentation.Pod{CPUMilli: req.Cpu().MilliValue()}
	var whole, milli int64
	for _, r := range wholeGPUResources {
		if q, ok := req[r]; ok {
			whole += q.Value()
		}
	}
	if q, ok := req[GPUMilliResource]; ok {
		milli = q.Value()
	}
	switch {
	case whole > 0:
		ask.NumGPU, ask.GPUMilli = clampU32(whole), 1000
	case milli > 0 && milli < 1000:
		ask.NumGPU, ask.GPUMilli = 1, uint32(milli)
	case milli >= 1000:
		ask.NumGPU, ask.GPUMilli = clampU32(milli/1000), 1000
	}
	return ask
}

// AllowedModels is the pod's GPU-model constraint: nil when it names none; an empty non-nil
// list when the annotation is there but lists no model (which no node satisfies).
func AllowedModels(pod *v1.Pod) []string {
	text, ok := pod.Annotations[GPUModelsAnnotation]
	if !ok {
		return nil
	}
	models := []string{}
	for _, m := range strings.FieldsFunc(text, func(r rune) bool { return r == '|' || r == ',' }) {
		if m = strings.TrimSpace(m); m != "" {
			models = append(models, m)
		}
	}
	return models
}

func clampU32(v int64) uint32 {
	if v > int64(^uint32(0)) {
		return ^uint32(0)
	}
	return uint32(v)
}
