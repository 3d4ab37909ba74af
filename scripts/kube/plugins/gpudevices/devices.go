package gpudevices

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The annotations HAMi uses, and the reporter reads (crates/reporter/src/gpu_share.rs).
const (
	// NodeRegisterAnnotation lists a node's devices.
	NodeRegisterAnnotation = "hami.io/node-nvidia-register"
	// PodAllocatedAnnotation says what a pod took per device.
	PodAllocatedAnnotation = "hami.io/vgpu-devices-allocated"
	// allocatedType is the device type HAMi writes in a pod's allocation (its NVIDIA vendor).
	allocatedType = "NVIDIA"
)

// Device is one physical GPU as a node registers it. Memory and Cores are the totals the
// allocations' used memory and cores are fractions of.
type Device struct {
	ID      string
	Memory  float64
	Cores   float64
	Healthy bool
}

// usable reports whether allocations can be made on the device and read back: a device with
// neither memory nor cores registered would read as idle whatever it holds.
func (d Device) usable() bool { return d.Healthy && (d.Memory > 0 || d.Cores > 0) }

type hamiJSONDevice struct {
	ID      *string `json:"id"`
	DevMem  float64 `json:"devmem"`
	DevCore float64 `json:"devcore"`
	Health  *bool   `json:"health"`
}

// ParseRegister reads hami.io/node-nvidia-register: the JSON list newer HAMi releases write, or
// `id,count,devmem,devcore,type,numa,health` entries joined by ':'. The same entries as the
// reporter reads, in the same order (so device indices agree): a text entry that lacks an id,
// devmem or devcore number is skipped; a JSON list that does not parse, or an entry without an
// id, gives no devices. A device is healthy unless its health field says false.
func ParseRegister(text string) []Device {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "[") {
		var list []hamiJSONDevice
		if err := json.Unmarshal([]byte(text), &list); err != nil {
			return nil
		}
		out := make([]Device, 0, len(list))
		for _, d := range list {
			if d.ID == nil {
				return nil
			}
			out = append(out, Device{ID: *d.ID, Memory: d.DevMem, Cores: d.DevCore, Healthy: d.Health == nil || *d.Health})
		}
		return out
	}
	var out []Device
	for _, entry := range strings.Split(text, ":") {
		if f, mem, cores, ok := entryFields(entry); ok {
			healthy := len(f) < 7 || !strings.EqualFold(f[6], "false")
			out = append(out, Device{ID: f[0], Memory: mem, Cores: cores, Healthy: healthy})
		}
	}
	return out
}

// Alloc is what a pod took of one device: memory and cores in the units the node registers.
type Alloc struct {
	ID    string
	Mem   float64
	Cores float64
}

// ParseAllocated reads hami.io/vgpu-devices-allocated: `uuid,type,usedmem,usedcores` per
// device joined by ':', containers joined by ';'. Entries that lack a number are skipped, as the
// reporter skips them.
func ParseAllocated(text string) []Alloc {
	var out []Alloc
	for _, container := range strings.Split(text, ";") {
		for _, entry := range strings.Split(container, ":") {
			if f, mem, cores, ok := entryFields(entry); ok {
				out = append(out, Alloc{ID: f[0], Mem: mem, Cores: cores})
			}
		}
	}
	return out
}

// EncodeAllocated writes allocs as one container's devices, in HAMi's format. Numbers are
// written exactly (integers, as HAMi writes them, whenever the share of the device's memory
// and cores is whole; else the shortest decimal that reads back as the same value).
func EncodeAllocated(allocs []Alloc) string {
	var b strings.Builder
	for _, a := range allocs {
		b.WriteString(a.ID)
		b.WriteString("," + allocatedType + ",")
		b.WriteString(strconv.FormatFloat(a.Mem, 'f', -1, 64))
		b.WriteString(",")
		b.WriteString(strconv.FormatFloat(a.Cores, 'f', -1, 64))
		b.WriteString(":")
	}
	b.WriteString(";")
	return b.String()
}

// allocOf is the allocation of milli thousandths of device d.
func allocOf(d Device, milli uint32) Alloc {
	return Alloc{ID: d.ID, Mem: d.Memory * float64(milli) / 1000, Cores: d.Cores * float64(milli) / 1000}
}

// freeMilli is a device's free share in milli-GPU given the memory and cores its pods use: the
// scarcer of the two, rounded, as the reporter computes it.
func freeMilli(d Device, mem, cores float64) uint32 {
	memUsed, coreUsed := 0.0, 0.0
	if d.Memory > 0 {
		memUsed = mem / d.Memory
	}
	if d.Cores > 0 {
		coreUsed = cores / d.Cores
	}
	free := math.Min(math.Max(1-math.Max(memUsed, coreUsed), 0), 1)
	if math.IsNaN(free) {
		return 0
	}
	return uint32(math.Round(free * 1000))
}

// entryFields splits one comma-separated device entry of either annotation: an id first, the
// memory and cores numbers third and fourth (ok false when they are not there, as the reporter
// skips such an entry).
func entryFields(entry string) (f []string, mem, cores float64, ok bool) {
	if strings.TrimSpace(entry) == "" {
		return nil, 0, 0, false
	}
	f = strings.Split(entry, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	if len(f) < 4 {
		return nil, 0, 0, false
	}
	mem, err1 := strconv.ParseFloat(f[2], 64)
	cores, err2 := strconv.ParseFloat(f[3], 64)
	return f, mem, cores, err1 == nil && err2 == nil
}
