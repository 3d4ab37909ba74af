package gpudevices

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func raw(text string) runtime.Object { return &runtime.Unknown{Raw: []byte(text)} }

func TestParseArgs(t *testing.T) {
	shapes := `"typicalShapes":[{"cpuMilli":4000,"numGpu":1,"gpuMilli":500,"frequency":1}]`
	for _, tc := range []struct {
		args    runtime.Object
		choice  ShareGPUChoice
		wantErr string
	}{
		{nil, BestFit, ""},
		{raw(`{}`), BestFit, ""},
		{raw(`{"shareGpuChoice":"fgdBestGradient",` + shapes + `}`), FGDBestGradient, ""},
		{raw("shareGpuChoice: fgdFirstBestScore\ntypicalShapes:\n- {cpuMilli: 1, numGpu: 0, gpuMilli: 0, frequency: 1}\n"), FGDFirstBestScore, ""},
		{raw(`{"shareGpuChoice":"mostFree"}`), "", "shareGpuChoice"},
		{raw(`{"shareGpuChoice":"fgdBestGradient"}`), "", "typicalShapes: empty"},
		{raw(`{` + shapes + `}`), "", "typicalShapes given with shareGpuChoice bestFit"},
		{raw(`{"shareGPUChoice":"bestFit"}`), "", "shareGPUChoice"},
		{raw(`{"shareGpuChoice":"fgdBestGradient","typicalShapes":[{"numGpu":1,"gpuMilli":1500,"frequency":1}]}`), "", "typicalShapes[0].gpuMilli"},
		{raw(`{"shareGpuChoice":"fgdBestGradient","typicalShapes":[{"numGpu":1,"gpuMilli":500,"frequency":-1}]}`), "", "typicalShapes[0].frequency"},
		{raw(`{"shareGpuChoice":"fgdBestGradient","typicalShapes":[{"numGpu":1,"gpuMilli":500,"gpuModels":[],"frequency":1}]}`), "", "typicalShapes[0].gpuModels"},
	} {
		args, err := ParseArgs(tc.args)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "" && args.ShareGPUChoice != tc.choice:
			t.Errorf("%v: choice %q", tc.args, args.ShareGPUChoice)
		}
	}
}
