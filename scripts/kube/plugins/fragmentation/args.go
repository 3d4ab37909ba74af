package fragmentation

import (
	"fmt"
	"math"
)

// ValidateShapes checks a typical-shape list from a plugin's args; field names the path it is
// at (e.g. "typicalShapes").
func ValidateShapes(field string, shapes []Shape) error {
	if len(shapes) == 0 {
		return fmt.Errorf("%s: empty (FGD measures fragmentation against the workload's typical shapes)", field)
	}
	sum := 0.0
	for i, s := range shapes {
		at := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case s.CPUMilli < 0:
			return fmt.Errorf("%s.cpuMilli: %d is negative", at, s.CPUMilli)
		case s.GPUMilli > 1000:
			return fmt.Errorf("%s.gpuMilli: %d is above 1000 (it is per GPU)", at, s.GPUMilli)
		case s.NumGPU > 1 && s.GPUMilli != 1000 && s.GPUMilli != 0:
			return fmt.Errorf("%s.gpuMilli: %d with numGpu %d (several GPUs are whole: 1000)", at, s.GPUMilli, s.NumGPU)
		case math.IsNaN(s.Frequency) || math.IsInf(s.Frequency, 0) || s.Frequency < 0:
			return fmt.Errorf("%s.frequency: %v is not a finite non-negative number", at, s.Frequency)
		}
		if s.GPUModels != nil && len(s.GPUModels) == 0 {
			return fmt.Errorf("%s.gpuModels: empty (omit it or null for any model)", at)
		}
		sum += s.Frequency
	}
	if sum <= 0 {
		return fmt.Errorf("%s: frequencies sum to %v, not above 0", field, sum)
	}
	return nil
}
