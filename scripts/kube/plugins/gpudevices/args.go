package gpudevices

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/aco-edge-extender/kube-tools/plugins/fragmentation"
)

// Args are AcoGpuDevices' pluginConfig args (one set per profile).
type Args struct {
	// ShareGPUChoice picks the GPU of a share: bestFit (the default), fgdFirstBestScore or
	// fgdBestGradient.
	ShareGPUChoice ShareGPUChoice `json:"shareGpuChoice"`
	// TypicalShapes are the shapes the FGD choices measure fragmentation against (required
	// with them, unused by bestFit).
	TypicalShapes []fragmentation.Shape `json:"typicalShapes"`
}

// DecodeStrict reads a plugin's args (nil: none given) into into, refusing unknown fields and
// matching names case-sensitively, as kube-scheduler reads its own plugins' args (a misspelt
// field is an error, not a silent default). kube-scheduler hands out-of-tree args over as JSON;
// YAML is read too.
func DecodeStrict(obj runtime.Object, into any) error {
	if obj == nil {
		return nil
	}
	u, ok := obj.(*runtime.Unknown)
	if !ok {
		return fmt.Errorf("args of type %T, want runtime.Unknown", obj)
	}
	if len(u.Raw) == 0 {
		return nil
	}
	data := u.Raw
	if !json.Valid(data) {
		var err error
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return err
		}
	}
	strict, err := kjson.UnmarshalStrict(data, into)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// ParseArgs decodes and checks AcoGpuDevices' args.
func ParseArgs(obj runtime.Object) (Args, error) {
	args := Args{ShareGPUChoice: BestFit}
	if err := DecodeStrict(obj, &args); err != nil {
		return args, fmt.Errorf("%s args: %w", Name, err)
	}
	if args.ShareGPUChoice == "" {
		args.ShareGPUChoice = BestFit
	}
	if !args.ShareGPUChoice.valid() {
		return args, fmt.Errorf("%s args: shareGpuChoice: %q is not one of %s, %s, %s", Name,
			args.ShareGPUChoice, BestFit, FGDFirstBestScore, FGDBestGradient)
	}
	if args.ShareGPUChoice.needsShapes() {
		if err := fragmentation.ValidateShapes("typicalShapes", args.TypicalShapes); err != nil {
			return args, fmt.Errorf("%s args (shareGpuChoice %s): %w", Name, args.ShareGPUChoice, err)
		}
	} else if len(args.TypicalShapes) > 0 {
		return args, fmt.Errorf("%s args: typicalShapes given with shareGpuChoice %s, which reads none", Name, args.ShareGPUChoice)
	}
	return args, nil
}
