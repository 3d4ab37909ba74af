package gpudevices

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const twoGPUs = "GPU-0,10,16000,100,T4,0,true:GPU-1,10,16000,100,T4,0,true:"

func node(name, register string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{GPUModelLabel: "T4"},
		Annotations: map[string]string{NodeRegisterAnnotation: register},
	}}
}

func boundPod(uid, nodeName, allocated string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}}
	p.Spec.NodeName = nodeName
	if allocated != "" {
		p.Annotations = map[string]string{PodAllocatedAnnotation: allocated}
	}
	return p
}

func free(t *testing.T, c *Cache, name string) []uint32 {
	t.Helper()
	v, ok := c.View(name)
	if !ok {
		t.Fatalf("node %s not in the cache", name)
	}
	return v.Free
}

func expectFree(t *testing.T, c *Cache, name string, want ...uint32) {
	t.Helper()
	if got := free(t, c, name); !reflect.DeepEqual(got, want) {
		t.Errorf("%s free = %v, want %v", name, got, want)
	}
}

func bestFitPick(pod uint32) func(NodeView) []int {
	return func(v NodeView) []int {
		return Choose(BestFit, NodeState{Free: v.Free, Model: v.Model}, share(pod), nil)
	}
}

func TestCacheCountsBoundPodsFromTheirAnnotation(t *testing.T) {
	c := NewCache()
	// A pod seen before its node (informers deliver in any order) still counts.
	c.SetPod(boundPod("a", "n1", "GPU-1,NVIDIA,4800,30:;"))
	c.SetNode(node("n1", twoGPUs))
	expectFree(t, c, "n1", 1000, 700)
	c.SetPod(boundPod("b", "n1", "GPU-1,NVIDIA,1600,10:GPU-0,NVIDIA,16000,100:;"))
	expectFree(t, c, "n1", 0, 600)
	// Not bound: an annotation alone (a previous attempt's) holds nothing.
	unbound := boundPod("c", "", "GPU-0,NVIDIA,16000,100:;")
	c.SetPod(unbound)
	expectFree(t, c, "n1", 0, 600)
	// A finished pod holds nothing (the scheduler's pod informer drops it; a phase says so too).
	done := boundPod("b", "n1", "GPU-1,NVIDIA,1600,10:GPU-0,NVIDIA,16000,100:;")
	done.Status.Phase = v1.PodSucceeded
	c.SetPod(done)
	expectFree(t, c, "n1", 1000, 700)
	c.DeletePod("a")
	expectFree(t, c, "n1", 1000, 1000)
}

// TestARestartedCacheSeesWhatWasPlaced: what one scheduler assumed, bound and annotated, a new
// cache reads back from the pods alone.
func TestARestartedCacheSeesWhatWasPlaced(t *testing.T) {
	first := NewCache()
	first.SetNode(node("n1", twoGPUs))
	var pods []*v1.Pod
	for i, m := range []uint32{600, 300, 1000} {
		uid := types.UID(string(rune('a' + i)))
		var allocs []Alloc
		var err error
		if m == 1000 {
			allocs, err = first.Assume(uid, "n1", 1000, func(v NodeView) []int { return Choose(BestFit, NodeState{Free: v.Free}, whole(1), nil) })
		} else {
			allocs, err = first.Assume(uid, "n1", m, bestFitPick(m))
		}
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, boundPod(string(uid), "n1", EncodeAllocated(allocs)))
	}
	// 600 on GPU 0, 300 best-fits the 400 left there, the whole GPU takes GPU 1.
	expectFree(t, first, "n1", 100, 0)
	second := NewCache()
	for _, p := range pods {
		second.SetPod(p)
	}
	second.SetNode(node("n1", twoGPUs))
	expectFree(t, second, "n1", 100, 0)
}

func TestAssumedPodsCountUntilBoundOrForgotten(t *testing.T) {
	c := NewCache()
	c.SetNode(node("n1", "GPU-0,1,16000,100,T4,0,true"))
	allocs, err := c.Assume("p", "n1", 600, bestFitPick(600))
	if err != nil {
		t.Fatal(err)
	}
	expectFree(t, c, "n1", 400)
	// Two shares of 600 never share one GPU.
	if _, err := c.Assume("q", "n1", 600, bestFitPick(600)); err == nil {
		t.Fatal("a second share of 600 fitted a GPU with 400 free")
	}
	expectFree(t, c, "n1", 400)
	// PreBind's patch is seen before the binding: still assumed.
	patched := boundPod("p", "", EncodeAllocated(allocs))
	c.SetPod(patched)
	if _, _, assumed, _ := c.Allocation("p"); !assumed {
		t.Error("an unbound pod's annotation turned the assumption into a binding")
	}
	// Bound: Unreserve (called for another pod's failure, or late) no longer drops it.
	c.SetPod(boundPod("p", "n1", EncodeAllocated(allocs)))
	c.Forget("p")
	expectFree(t, c, "n1", 400)
	if _, n, assumed, ok := c.Allocation("p"); !ok || assumed || n != "n1" {
		t.Errorf("allocation of p: node %q assumed %v ok %v", n, assumed, ok)
	}
	// An assumption forgotten (binding failed) frees the device, and forgetting twice is harmless.
	if _, err := c.Assume("r", "n1", 400, bestFitPick(400)); err != nil {
		t.Fatal(err)
	}
	expectFree(t, c, "n1", 0)
	c.Forget("r")
	c.Forget("r")
	expectFree(t, c, "n1", 400)
}

func TestABoundPodWithoutAnnotation(t *testing.T) {
	c := NewCache()
	c.SetNode(node("n1", twoGPUs))
	if _, err := c.Assume("p", "n1", 500, bestFitPick(500)); err != nil {
		t.Fatal(err)
	}
	// Bound where it was assumed, annotation not seen: the assumption stands.
	c.SetPod(boundPod("p", "n1", ""))
	expectFree(t, c, "n1", 500, 1000)
	// Bound elsewhere without an annotation: it holds no device this cache knows of.
	c.SetPod(boundPod("p", "n2", ""))
	expectFree(t, c, "n1", 1000, 1000)
}

func TestNodeChanges(t *testing.T) {
	c := NewCache()
	c.SetNode(node("n1", twoGPUs))
	c.SetPod(boundPod("a", "n1", "GPU-1,NVIDIA,8000,50:;"))
	// Devices re-registered in another order: allocations follow the device IDs.
	c.SetNode(node("n1", "GPU-1,10,16000,100,T4,0,true:GPU-0,10,16000,100,T4,0,true"))
	expectFree(t, c, "n1", 500, 1000)
	// An unhealthy device takes nothing more.
	c.SetNode(node("n1", "GPU-1,10,16000,100,T4,0,true:GPU-0,10,16000,100,T4,0,false"))
	expectFree(t, c, "n1", 500, 0)
	// JSON register of the same devices.
	c.SetNode(node("n1", `[{"id":"GPU-0","devmem":16000,"devcore":100},{"id":"GPU-1","devmem":16000,"devcore":100}]`))
	expectFree(t, c, "n1", 1000, 500)
	if v, _ := c.View("n1"); v.Model != "T4" || len(v.Devices) != 2 {
		t.Errorf("view %+v", v)
	}
	c.DeleteNode("n1")
	if _, ok := c.View("n1"); ok {
		t.Error("deleted node still viewed")
	}
	if _, err := c.Assume("x", "n1", 100, bestFitPick(100)); err == nil {
		t.Error("assumed on a node the cache does not know")
	}
	// The pod survives its node's deletion and counts again when the node comes back.
	c.SetNode(node("n1", twoGPUs))
	expectFree(t, c, "n1", 1000, 500)
}

func TestViewsAreCopies(t *testing.T) {
	c := NewCache()
	c.SetNode(node("n1", twoGPUs))
	v, _ := c.View("n1")
	v.Free[0] = 0
	expectFree(t, c, "n1", 1000, 1000)
}
