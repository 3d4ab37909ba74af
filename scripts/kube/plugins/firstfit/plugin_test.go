package firstfit

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
)

func TestFirstNodeByNameTakesTheWholeScore(t *testing.T) {
	scores := fwk.NodeScoreList{{Name: "openb-node-0412", Score: 7}, {Name: "openb-node-0031", Score: 3}, {Name: "openb-node-1200"}}
	First(scores)
	want := []int64{0, fwk.MaxNodeScore, 0}
	for i, s := range scores {
		if s.Score != want[i] {
			t.Errorf("%s: %d, want %d", s.Name, s.Score, want[i])
		}
	}
	First(nil) // no feasible node: nothing to do, no panic
}
