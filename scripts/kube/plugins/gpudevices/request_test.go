package gpudevices

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
)

func podWith(annotations map[string]string, containers ...v1.ResourceList) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p", Annotations: annotations}}
	for _, r := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: r}})
	}
	return p
}

func res(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestPodAsk(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want fragmentation.Pod
	}{
		{"a share", podWith(nil, res("cpu", "6", "alibabacloud.com/gpu-milli", "460")), fragmentation.Pod{CPUMilli: 6000, NumGPU: 1, GPUMilli: 460}},
		{"whole GPUs by count", podWith(nil, res("cpu", "12", "alibabacloud.com/gpu-count", "2")), fragmentation.Pod{CPUMilli: 12000, NumGPU: 2, GPUMilli: 1000}},
		{"count beside k×1000 milli", podWith(nil, res("cpu", "1", "alibabacloud.com/gpu-count", "4", "alibabacloud.com/gpu-milli", "4000")), fragmentation.Pod{CPUMilli: 1000, NumGPU: 4, GPUMilli: 1000}},
		{"k×1000 milli alone", podWith(nil, res("cpu", "1", "alibabacloud.com/gpu-milli", "2000")), fragmentation.Pod{CPUMilli: 1000, NumGPU: 2, GPUMilli: 1000}},
		{"nvidia.com/gpu", podWith(nil, res("cpu", "500m", "nvidia.com/gpu", "1")), fragmentation.Pod{CPUMilli: 500, NumGPU: 1, GPUMilli: 1000}},
		{"CPU only", podWith(nil, res("cpu", "12500m")), fragmentation.Pod{CPUMilli: 12500}},
		{"requests summed over containers", podWith(nil, res("cpu", "1"), res("cpu", "2", "alibabacloud.com/gpu-milli", "300")), fragmentation.Pod{CPUMilli: 3000, NumGPU: 1, GPUMilli: 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodAsk(tc.pod); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAllowedModels(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        []string
	}{
		{nil, nil},
		{map[string]string{GPUModelsAnnotation: "V100M16|V100M32"}, []string{"V100M16", "V100M32"}},
		{map[string]string{GPUModelsAnnotation: " T4 , P100 "}, []string{"T4", "P100"}},
		{map[string]string{GPUModelsAnnotation: " | "}, []string{}},
	} {
		got := AllowedModels(podWith(tc.annotations))
		if !reflect.DeepEqual(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%v: got %#v, want %#v", tc.annotations, got, tc.want)
		}
	}
}
