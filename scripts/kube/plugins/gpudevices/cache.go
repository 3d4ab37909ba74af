package gpudevices

import (
	"context"
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Cache is the per-device view of every node: the devices each node registers and what every
// pod holds of them. Fed by the informers kube-scheduler already runs (nodes, and its pods
// informer, which leaves out finished pods): a bound pod's allocation is read back from its
// annotation, so a restarted scheduler sees what its predecessor placed. Pods this scheduler
// reserved but whose binding has not been seen are assumed, as kube-scheduler assumes them,
// until the informer shows them bound (with the annotation PreBind wrote) or Unreserve forgets
// them. One Cache per process, shared by every profile (see Shared): devices are the nodes',
// not a profile's.
type Cache struct {
	mu     sync.RWMutex
	nodes  map[string]*nodeEntry
	pods   map[types.UID]*podEntry
	byNode map[string]map[types.UID]*podEntry
	synced []cache.InformerSynced
}

type nodeEntry struct {
	devices []Device
	model   string
	// free is derived from devices and the pods on the node (recompute).
	free []uint32
}

type podEntry struct {
	node    string
	allocs  []Alloc
	assumed bool
}

// NodeView is a copy of one node's device state.
type NodeView struct {
	Devices []Device
	Model   string
	// Free milli-GPU per device, in registration order; 0 for a device that takes no
	// allocation (unhealthy, or registering neither memory nor cores).
	Free []uint32
}

// NewCache is an empty cache (unit tests feed it directly; kube-scheduler's via Attach).
func NewCache() *Cache {
	return &Cache{
		nodes:  map[string]*nodeEntry{},
		pods:   map[types.UID]*podEntry{},
		byNode: map[string]map[types.UID]*podEntry{},
	}
}

var shared struct {
	once  sync.Once
	cache *Cache
	err   error
}

// Shared is the process's cache, attached to kube-scheduler's informers on first use (every
// profile's plugins get the same one; kube-scheduler gives every profile the same informer
// factory).
func Shared(factory informers.SharedInformerFactory) (*Cache, error) {
	shared.once.Do(func() {
		c := NewCache()
		if err := c.Attach(factory); err != nil {
			shared.err = err
			return
		}
		shared.cache = c
	})
	return shared.cache, shared.err
}

// Attach feeds the cache from factory's node and pod informers.
func (c *Cache) Attach(factory informers.SharedInformerFactory) error {
	nodes, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nodeEvent(obj, false) },
		UpdateFunc: func(_, obj any) { c.nodeEvent(obj, false) },
		DeleteFunc: func(obj any) { c.nodeEvent(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	pods, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podEvent(obj, false) },
		UpdateFunc: func(_, obj any) { c.podEvent(obj, false) },
		DeleteFunc: func(obj any) { c.podEvent(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	c.synced = []cache.InformerSynced{nodes.HasSynced, pods.HasSynced}
	return nil
}

// WaitForSync returns once the informers' initial lists have reached the cache: kube-scheduler
// waits for its own handlers before scheduling, not for these.
func (c *Cache) WaitForSync(ctx context.Context) error {
	for _, s := range c.synced {
		if !s() {
			if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
				return fmt.Errorf("GPU device cache not synced: %w", ctx.Err())
			}
			return nil
		}
	}
	return nil
}

func tombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func (c *Cache) nodeEvent(obj any, deleted bool) {
	node, ok := tombstone(obj).(*v1.Node)
	if !ok {
		return
	}
	if deleted {
		c.DeleteNode(node.Name)
	} else {
		c.SetNode(node)
	}
}

func (c *Cache) podEvent(obj any, deleted bool) {
	pod, ok := tombstone(obj).(*v1.Pod)
	if !ok {
		return
	}
	if deleted {
		c.DeletePod(pod.UID)
	} else {
		c.SetPod(pod)
	}
}

// SetNode records node's devices (its hami.io/node-nvidia-register) and GPU model.
func (c *Cache) SetNode(node *v1.Node) {
	devices := ParseRegister(node.Annotations[NodeRegisterAnnotation])
	model := node.Labels[GPUModelLabel]
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.nodes[node.Name]; ok && n.model == model && equalDevices(n.devices, devices) {
		return
	}
	c.nodes[node.Name] = &nodeEntry{devices: devices, model: model}
	c.recompute(node.Name)
}

// DeleteNode forgets a node (its pods stay until they are deleted themselves).
func (c *Cache) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
}

// SetPod records what the informer shows of pod. Bound with an allocation annotation: that is
// what it holds. Not bound yet: an assumed allocation stays (PreBind's patch is seen before the
// binding). Bound without the annotation: an assumed allocation on the same node stays, any
// other is dropped (the pod holds no device this cache knows of). Finished: dropped.
func (c *Cache) SetPod(pod *v1.Pod) {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		c.DeletePod(pod.UID)
		return
	}
	if pod.Spec.NodeName == "" {
		return
	}
	allocs := ParseAllocated(pod.Annotations[PodAllocatedAnnotation])
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.pods[pod.UID]
	if len(allocs) == 0 {
		if old != nil && !(old.assumed && old.node == pod.Spec.NodeName) {
			c.remove(pod.UID)
		}
		return
	}
	c.put(pod.UID, &podEntry{node: pod.Spec.NodeName, allocs: allocs})
}

// DeletePod forgets pod uid's allocation, bound or assumed.
func (c *Cache) DeletePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(uid)
}

// View is a copy of node's device state (ok false: the node is not known).
func (c *Cache) View(node string) (NodeView, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[node]
	if !ok {
		return NodeView{}, false
	}
	return NodeView{
		Devices: append([]Device(nil), n.devices...),
		Model:   n.model,
		Free:    append([]uint32(nil), n.free...),
	}, true
}

// Free is a copy of node's free milli per device (ok false: the node is not known), without the
// rest of View: Filter and Score read it once per node per pod.
func (c *Cache) Free(node string) ([]uint32, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[node]
	if !ok {
		return nil, false
	}
	return append([]uint32(nil), n.free...), true
}

// Assume reserves for pod uid the devices pick chooses on node (indices into the view's Free;
// nil: nothing fits any more), milli thousandths of each, atomically with the choice. It
// returns the allocation, which replaces any earlier one of the pod.
func (c *Cache) Assume(uid types.UID, node string, milli uint32, pick func(NodeView) []int) ([]Alloc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[node]
	if !ok {
		return nil, fmt.Errorf("node %s is not in the GPU device cache", node)
	}
	chosen := pick(NodeView{Devices: n.devices, Model: n.model, Free: append([]uint32(nil), n.free...)})
	if len(chosen) == 0 {
		return nil, fmt.Errorf("node %s: the pod's GPUs no longer fit its devices (free per GPU: %v)", node, n.free)
	}
	allocs := make([]Alloc, 0, len(chosen))
	for _, i := range chosen {
		allocs = append(allocs, allocOf(n.devices[i], milli))
	}
	c.put(uid, &podEntry{node: node, allocs: allocs, assumed: true})
	return allocs, nil
}

// Forget drops pod uid's allocation if it is still assumed (Unreserve: the binding failed or
// was never tried); a bound pod's stays.
func (c *Cache) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pods[uid]; ok && p.assumed {
		c.remove(uid)
	}
}

// Allocation is what pod uid holds, and whether it is only assumed.
func (c *Cache) Allocation(uid types.UID) (allocs []Alloc, node string, assumed bool, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.pods[uid]
	if !ok {
		return nil, "", false, false
	}
	return append([]Alloc(nil), p.allocs...), p.node, p.assumed, true
}

func (c *Cache) put(uid types.UID, p *podEntry) {
	c.remove(uid)
	c.pods[uid] = p
	if c.byNode[p.node] == nil {
		c.byNode[p.node] = map[types.UID]*podEntry{}
	}
	c.byNode[p.node][uid] = p
	c.recompute(p.node)
}

func (c *Cache) remove(uid types.UID) {
	p, ok := c.pods[uid]
	if !ok {
		return
	}
	delete(c.pods, uid)
	delete(c.byNode[p.node], uid)
	if len(c.byNode[p.node]) == 0 {
		delete(c.byNode, p.node)
	}
	c.recompute(p.node)
}

// recompute derives node's free shares from scratch (a node holds few pods; sums kept across
// events would drift), summing pods in UID order so that the result does not depend on map
// order.
func (c *Cache) recompute(node string) {
	n, ok := c.nodes[node]
	if !ok {
		return
	}
	index := make(map[string]int, len(n.devices))
	for i := len(n.devices) - 1; i >= 0; i-- {
		index[n.devices[i].ID] = i // the first device of an ID, as the reporter matches them
	}
	mem := make([]float64, len(n.devices))
	cores := make([]float64, len(n.devices))
	uids := make([]string, 0, len(c.byNode[node]))
	for uid := range c.byNode[node] {
		uids = append(uids, string(uid))
	}
	sort.Strings(uids)
	for _, uid := range uids {
		for _, a := range c.byNode[node][types.UID(uid)].allocs {
			if i, ok := index[a.ID]; ok {
				mem[i] += a.Mem
				cores[i] += a.Cores
			}
		}
	}
	n.free = make([]uint32, len(n.devices))
	for i, d := range n.devices {
		if d.usable() {
			n.free[i] = freeMilli(d, mem[i], cores[i])
		}
	}
}

func equalDevices(a, b []Device) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
