// Package firstfit is AcoFirstFit, First-Fit as a kube-scheduler score plugin: of the nodes a
// pod may go to, the first in the order of node names scores 100 and every other 0, so
// kube-scheduler binds the first feasible node. It is the simulator's First-Fit
// (crates/sim/src/policy/first_fit.rs, the first feasible node in cluster order) for a cluster
// whose node names sort in its order, as the OpenB trace's (openb-node-0000, …) do.
//
// kube-scheduler scores only the nodes its filtering found, and it stops filtering after
// percentageOfNodesToScore of them from a start that rotates between pods: run the profile with
// percentageOfNodesToScore: 100, or "first" means first of a rotating sample.
package firstfit

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "AcoFirstFit"

// Plugin is AcoFirstFit; it has no state and no args.
type Plugin struct{}

var (
	_ fwk.ScorePlugin     = Plugin{}
	_ fwk.ScoreExtensions = Plugin{}
)

// New is the plugin factory kube-scheduler calls once per profile that enables it.
func New(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return Plugin{}, nil }

// Name implements fwk.Plugin.
func (Plugin) Name() string { return Name }

// Score leaves every node at 0: the order is only known over all of them (NormalizeScore).
func (Plugin) Score(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, nil
}

// ScoreExtensions implements fwk.ScorePlugin.
func (p Plugin) ScoreExtensions() fwk.ScoreExtensions { return p }

// NormalizeScore gives the first node by name the maximum score and every other node none.
func (Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	First(scores)
	return nil
}

// First sets the score of the node whose name sorts first to fwk.MaxNodeScore and the others' to 0.
func First(scores fwk.NodeScoreList) {
	first := -1
	for i := range scores {
		if first < 0 || scores[i].Name < scores[first].Name {
			first = i
		}
		scores[i].Score = 0
	}
	if first >= 0 {
		scores[first].Score = fwk.MaxNodeScore
	}
}
