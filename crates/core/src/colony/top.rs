//! One node at the top of every answer, so that the extender knows where the pod will go.
//!
//! kube-scheduler adds `score × weight × 10` to its plugins' total (weight 5 in
//! k8s/scheduler-config.yaml: one point of ours outweighs a default plugin's whole range), so the
//! node we score highest is the node it binds — unless several share our top score, when its own
//! plugins (LeastAllocated first: spreading) or its random tie-break decide. The extender then
//! cannot tell which node to count the pod on until the facts show it (`assumed.rs`), and the
//! tie goes to the spreading rule the colony exists to replace. So the tie is broken here: among
//! the nodes sharing the top score one keeps it and the others drop one point, as the ACS
//! exploration rule does for the node it explores.
//!
//! The winner is the most desirable of the tied nodes (all within 5% of the best round to 10),
//! and of equally desirable ones — identical idle nodes — the one whose name hashes lowest
//! together with the pod's key: no input order and no name is favoured across pods, and the same
//! pod over the same nodes gets the same answer wherever it is scored (the Worker and the simulator's native pipeline agree placement
//! for placement, `tests/replay_matches_native.rs`), with no randomness source.

/// FNV-1a (64 bit) of `bytes`, continuing from `state`: stable across builds and platforms.
fn fnv1a(state: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(state, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// How equally desirable nodes are told apart for the pod `pod_key`: the lowest rank wins.
/// (Shadow mode's counterfactual ranks with it too, so that it names prioritize's answer.)
pub fn tie_rank(pod_key: &str) -> impl Fn(&str) -> u64 {
    let pod = fnv1a(fnv1a(FNV_OFFSET, pod_key.as_bytes()), &[0xff]);
    move |node| fnv1a(pod, node.as_bytes())
}

/// Makes the top score unique: of the candidates sharing the highest score, the most desirable
/// keeps it — of equally desirable ones, the one whose name hashes lowest with `pod_key` — and
/// every other drops one point. Returns the index of the top candidate, or `None` when there is
/// none to name (no candidates, or every score 0: kube-scheduler's plugins decide, and no node
/// can be assumed).
pub fn single_out_top<'n>(
    scores: &mut [i64],
    desirabilities: &[f64],
    name_of: impl Fn(usize) -> &'n str,
    pod_key: &str,
) -> Option<usize> {
    let max = *scores.iter().max()?;
    if max <= 0 {
        return None;
    }
    let tie = tie_rank(pod_key);
    let rank = |i: usize| tie(name_of(i));
    let desirability = |i: usize| desirabilities.get(i).copied().unwrap_or(0.0);
    let top = (0..scores.len())
        .filter(|&i| scores[i] == max)
        .min_by(|&a, &b| {
            desirability(b)
                .total_cmp(&desirability(a))
                .then_with(|| rank(a).cmp(&rank(b)))
                .then(a.cmp(&b))
        })?;
    for (i, s) in scores.iter_mut().enumerate() {
        if *s == max && i != top {
            *s = max - 1;
        }
    }
    Some(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("node-{i}")).collect()
    }

    #[test]
    fn one_tied_node_keeps_the_top_score_and_the_rest_drop_a_point() {
        let nodes = names(5);
        let mut scores = vec![10, 7, 10, 10, 3];
        let equal = [1.0; 5];
        let top = single_out_top(&mut scores, &equal, |i| &nodes[i], "ns/pod-1").unwrap();
        assert!([0, 2, 3].contains(&top));
        assert_eq!(scores[top], 10);
        assert_eq!(scores.iter().filter(|s| **s == 10).count(), 1);
        assert_eq!(scores.iter().filter(|s| **s == 9).count(), 2);
        assert_eq!((scores[1], scores[4]), (7, 3), "untied scores are kept");
    }

    #[test]
    fn a_unique_top_is_left_alone_and_nothing_is_named_without_a_positive_score() {
        let nodes = names(3);
        let mut scores = vec![4, 10, 9];
        let d = [0.4, 1.0, 0.9];
        assert_eq!(single_out_top(&mut scores, &d, |i| &nodes[i], "p"), Some(1));
        assert_eq!(scores, vec![4, 10, 9]);
        let mut zeros = vec![0, 0];
        assert_eq!(
            single_out_top(&mut zeros, &[0.0; 2], |i| &nodes[i], "p"),
            None
        );
        assert_eq!(zeros, vec![0, 0]);
        assert_eq!(single_out_top(&mut [], &[], |i| &nodes[i], "p"), None);
    }

    #[test]
    fn the_winner_depends_on_the_pod_and_the_names_not_on_the_order() {
        let nodes = names(20);
        let winner = |pod: &str, order: &[usize]| {
            let mut scores = vec![10; order.len()];
            let equal = vec![1.0; order.len()];
            let i = single_out_top(&mut scores, &equal, |i| &nodes[order[i]], pod).unwrap();
            order[i]
        };
        let forward: Vec<usize> = (0..20).collect();
        let backward: Vec<usize> = (0..20).rev().collect();
        let mut winners = std::collections::BTreeSet::new();
        for p in 0..200 {
            let pod = format!("ns/pod-{p}");
            let w = winner(&pod, &forward);
            assert_eq!(w, winner(&pod, &backward), "{pod}");
            winners.insert(w);
        }
        // Across pods every node wins some ties: no position and no name is favoured.
        assert_eq!(winners.len(), 20, "{winners:?}");
    }

    #[test]
    fn of_the_tied_scores_the_most_desirable_node_is_the_top() {
        let nodes = names(3);
        // 0.96 and 1.0 both round to 10; the better one is the extender's answer.
        let mut scores = vec![10, 10, 10];
        let d = [0.96, 1.0, 0.97];
        assert_eq!(single_out_top(&mut scores, &d, |i| &nodes[i], "p"), Some(1));
        assert_eq!(scores, vec![9, 10, 9]);
    }
}
