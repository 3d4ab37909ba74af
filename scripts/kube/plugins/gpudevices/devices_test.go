package gpudevices

import (
	"reflect"
	"testing"
)

func TestParseRegister(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []Device
	}{
		{
			name: "text form, trailing separator (gpu_share.rs's example)",
			text: "GPU-aaa,10,32768,100,NVIDIA-Tesla V100,0,true:GPU-bbb,10,32768,100,NVIDIA-Tesla V100,0,true:",
			want: []Device{{"GPU-aaa", 32768, 100, true}, {"GPU-bbb", 32768, 100, true}},
		},
		{
			name: "text form: an unhealthy device keeps its index",
			text: "a,10,16000,100,T4,0,false:b,10,16000,100,T4,0,true",
			want: []Device{{"a", 16000, 100, false}, {"b", 16000, 100, true}},
		},
		{
			name: "text form: entries without numbers are skipped, as the reporter skips them",
			text: " a , 1 , 1000 , 100 :broken:c,1,x,100:d,1,2000,100",
			want: []Device{{"a", 1000, 100, true}, {"d", 2000, 100, true}},
		},
		{
			name: "JSON form (newer HAMi)",
			text: `[{"id":"GPU-x","count":10,"devmem":16000,"devcore":100,"type":"T4","numa":0,"health":true},{"id":"GPU-y","devmem":16000,"devcore":100,"health":false,"mode":"hami-core"}]`,
			want: []Device{{"GPU-x", 16000, 100, true}, {"GPU-y", 16000, 100, false}},
		},
		{name: "JSON entry without an id: no devices", text: `[{"devmem":1}]`, want: nil},
		{name: "JSON that does not parse", text: `[{"id":1}]`, want: nil},
		{name: "garbage", text: "garbage", want: nil},
		{name: "absent", text: "", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseRegister(tc.text)
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseAllocated(t *testing.T) {
	got := ParseAllocated("GPU-aaa,NVIDIA,8192,20:;GPU-bbb,NVIDIA,8192,60:GPU-ccc,NVIDIA,bad,1:;;")
	want := []Alloc{{"GPU-aaa", 8192, 20}, {"GPU-bbb", 8192, 60}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := ParseAllocated(""); len(got) != 0 {
		t.Errorf("empty: %+v", got)
	}
}

// TestEncodedSharesReadBackExactly: whatever share a pod takes of a device, the annotation
// PreBind writes reads back (as the reporter computes it) as exactly that share taken.
func TestEncodedSharesReadBackExactly(t *testing.T) {
	for _, d := range []Device{
		{"GPU-a", 16384, 100, true}, // HAMi's MiB and percent
		{"GPU-b", 32768, 100, true},
		{"GPU-c", 16000, 100, true},
		{"GPU-d", 0, 100, true}, // cores only
		{"GPU-e", 24576, 0, true},
	} {
		for m := uint32(1); m <= 1000; m++ {
			text := EncodeAllocated([]Alloc{allocOf(d, m)})
			back := ParseAllocated(text)
			if len(back) != 1 || back[0].ID != d.ID {
				t.Fatalf("%s: %q read back as %+v", d.ID, text, back)
			}
			if free := freeMilli(d, back[0].Mem, back[0].Cores); free != 1000-m {
				t.Fatalf("%s: %d milli written as %q read back as %d free", d.ID, m, text, free)
			}
		}
	}
	// HAMi writes integers: so does the encoding whenever the share is whole.
	if got := EncodeAllocated([]Alloc{allocOf(Device{"g", 16000, 100, true}, 460)}); got != "g,NVIDIA,7360,46:;" {
		t.Errorf("got %q", got)
	}
	if got := EncodeAllocated([]Alloc{allocOf(Device{"g", 16000, 100, true}, 1000), allocOf(Device{"h", 16000, 100, true}, 1000)}); got != "g,NVIDIA,16000,100:h,NVIDIA,16000,100:;" {
		t.Errorf("got %q", got)
	}
}

func TestFreeMilliIsTheScarcerResource(t *testing.T) {
	d := Device{"x", 32768, 100, true}
	// gpu_share.rs's example: 25% of memory but 60% of cores used → 400 free.
	if got := freeMilli(d, 8192, 60); got != 400 {
		t.Errorf("got %d", got)
	}
	if got := freeMilli(d, 2*32768, 0); got != 0 {
		t.Errorf("overcommitted: got %d", got)
	}
	if got := freeMilli(Device{"z", 0, 0, true}, 5, 5); got != 1000 {
		t.Errorf("nothing registered reads as idle (why such a device is not usable): got %d", got)
	}
	if (Device{"z", 0, 0, true}).usable() || (Device{"u", 1, 1, false}).usable() || !d.usable() {
		t.Error("usable")
	}
}
