// aco-kube-scheduler is the stock kube-scheduler of the pinned k8s.io/kubernetes with two
// out-of-tree plugins compiled in (as kubernetes-sigs/scheduler-plugins builds its scheduler):
// AcoGpuDevices (per-GPU device accounting, the stand-in for HAMi's scheduler extender), AcoFGD
// (FGD as a score plugin) and AcoFirstFit (First-Fit as a score plugin). Same flags and config as kube-scheduler; a profile enables
// the plugins by name (scripts/kube/plugins/README.md). Built by scripts/build-kube.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version" // for version metric registration
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/aco-edge-extender/kube-tools/plugins/fgd"
	"github.com/aco-edge-extender/kube-tools/plugins/firstfit"
	"github.com/aco-edge-extender/kube-tools/plugins/gpudevices"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(gpudevices.Name, gpudevices.New),
		app.WithPlugin(fgd.Name, fgd.New),
		app.WithPlugin(firstfit.Name, firstfit.New),
	)
	os.Exit(cli.Run(command))
}
