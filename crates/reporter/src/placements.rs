//! Which pods to report, and what is still owed to the Worker for each.
//!
//! A pod is ours when its `spec.schedulerName` is one of the extender's schedulers. Once it has a
//! `spec.nodeName` we owe the Worker its placement; once its fate is known ([`crate::outcome`]),
//! its outcome. The [`Ledger`] remembers, per pod UID, what was queued and what the Worker
//! acknowledged. It lives in memory only: after a restart every recent pod is owed again, and
//! the Worker's idempotence per pod UID turns the repeats into counted duplicates — that is the
//! "re-derive what may be unreported from the API server's state" rule, and why nothing is lost.
//!
//! Shadow mode: a pod bound by one of `--shadow-scheduler-names` (and not by ours) is a shadow
//! pod. It goes through the same ledger and the same outcome rules, but to `POST /v1/shadow`
//! and carrying the pod as bound ([`PodRecord::wire_pod`]): the Worker scores it as the
//! tenant's colony would have and counts where it really went; nothing is deposited.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use aco_core::config::PodKeys;
use aco_core::demand::tenant_of;
use aco_core::k8s::PodView;
use aco_core::names::{NodeName, PodKey};
use serde_json::Value;

use crate::attribution::{workload_of, Attribution, Decision};
use crate::outcome::{classify, OutcomeRules, Presence, Verdict};
use crate::pod_record::PodRecord;
use aco_core::api::placements::PlacementReport;

/// Whose pod it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Bound by one of the extender's schedulers: placements and outcomes teach the colony.
    Ours,
    /// Bound by a scheduler the extender does not steer: scored in shadow, never deposited.
    Shadow,
}

/// The schedulers whose pods are reported, and how.
#[derive(Debug, Clone, Copy)]
pub struct Schedulers<'a> {
    pub ours: &'a [String],
    pub shadow: &'a [String],
}

impl Schedulers<'_> {
    /// The role of a pod scheduled by `scheduler` (a name in both lists is ours).
    pub fn role(&self, scheduler: &str) -> Option<Role> {
        if self.ours.iter().any(|s| s == scheduler) {
            Some(Role::Ours)
        } else if self.shadow.iter().any(|s| s == scheduler) {
            Some(Role::Shadow)
        } else {
            None
        }
    }
}

/// A bound pod of one of our schedulers, or a shadow pod.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundPod {
    pub role: Role,
    pub uid: PodKey,
    pub namespace: String,
    pub name: String,
    pub tenant: String,
    pub node: NodeName,
    /// When kube-scheduler bound it (the PodScheduled condition), else its creation time.
    pub bound_at_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Placement,
    Outcome,
    /// A shadow pod's placement (where it really went).
    Shadow,
    /// A shadow pod's later outcome.
    ShadowOutcome,
}

/// Where a report goes: one request carries one endpoint's reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `POST /v1/placements`
    Placements,
    /// `POST /v1/shadow`
    Shadow,
}

impl Endpoint {
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Placements => "/v1/placements",
            Endpoint::Shadow => "/v1/shadow",
        }
    }

    /// The `kind` label of `aco_reporter_requests_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Placements => "placements",
            Endpoint::Shadow => "shadow",
        }
    }
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Placement,
        Kind::Outcome,
        Kind::Shadow,
        Kind::ShadowOutcome,
    ];

    /// The `kind` label of the reporter's counters.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Placement => "placements",
            Kind::Outcome => "outcomes",
            Kind::Shadow => "shadow",
            Kind::ShadowOutcome => "shadow_outcomes",
        }
    }

    fn placement(role: Role) -> Kind {
        match role {
            Role::Ours => Kind::Placement,
            Role::Shadow => Kind::Shadow,
        }
    }

    fn outcome(role: Role) -> Kind {
        match role {
            Role::Ours => Kind::Outcome,
            Role::Shadow => Kind::ShadowOutcome,
        }
    }

    /// A placement (which may carry its outcome), not an outcome of an acknowledged placement.
    pub fn is_placement(self) -> bool {
        matches!(self, Kind::Placement | Kind::Shadow)
    }

    pub fn endpoint(self) -> Endpoint {
        match self {
            Kind::Placement | Kind::Outcome => Endpoint::Placements,
            Kind::Shadow | Kind::ShadowOutcome => Endpoint::Shadow,
        }
    }
}

/// One report waiting for delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub kind: Kind,
    pub report: PlacementReport,
    pub bound_at_ms: u64,
    /// Shadow reports: the pod as bound ([`PodRecord::wire_pod`]).
    pub pod: Option<Arc<Value>>,
}

impl Item {
    /// The pod's UID, the ledger's key (the reporter always names the pod by it).
    pub fn uid(&self) -> &str {
        self.report.pod_uid.as_deref().unwrap_or_default()
    }

    /// The pod's tenant (the reporter always sends it), by which deliveries are batched.
    pub fn tenant(&self) -> &str {
        self.report.tenant.as_deref().unwrap_or_default()
    }
}

/// Why a pod of ours is not reported (counted by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Neither our scheduler's nor a shadow scheduler's.
    NotOurs,
    NotBound,
    NoUid,
    /// A UID or node name the Worker would refuse (the validator's reason): reporting it would
    /// fail its whole batch.
    InvalidName(String),
    /// The Worker's tenant rule refuses the pod (e.g. `TENANT_SOURCE=label` without the label).
    Tenant(String),
}

pub fn bound_pod(
    pod: &PodRecord,
    schedulers: &Schedulers<'_>,
    pod_keys: &PodKeys,
) -> Result<BoundPod, Skip> {
    // The API server defaults an empty schedulerName to the default scheduler.
    let scheduler = pod.scheduler.as_deref().unwrap_or("default-scheduler");
    let role = schedulers.role(scheduler).ok_or(Skip::NotOurs)?;
    let node =
        NodeName::parse(pod.node.as_deref().ok_or(Skip::NotBound)?).map_err(Skip::InvalidName)?;
    let uid = Some(&*pod.uid)
        .filter(|u| !u.is_empty())
        .ok_or(Skip::NoUid)?;
    let uid = PodKey::parse(uid).map_err(Skip::InvalidName)?;
    let view = PodView {
        metadata: aco_core::k8s::PodMeta {
            name: pod.name.to_string(),
            namespace: pod.namespace.to_string(),
            uid: uid.to_string(),
            labels: pod.label_map(),
            annotations: Default::default(),
        },
        spec: Default::default(),
    };
    let tenant = tenant_of(&view, pod_keys).map_err(|e| Skip::Tenant(e.to_string()))?;
    Ok(BoundPod {
        role,
        uid,
        namespace: view.metadata.namespace,
        name: view.metadata.name,
        tenant,
        node,
        bound_at_ms: pod.scheduled_ms.or(pod.created_ms).unwrap_or(0),
    })
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Owed {
    placement_queued: bool,
    placement_done: bool,
    outcome_queued: bool,
    outcome_done: bool,
    /// What the pod's end came to, once decided (final: a success's run time is recorded once).
    decision: Option<Decision>,
}

/// How far back a restarted reporter looks for pods that may be unreported.
#[derive(Debug, Clone, Copy)]
pub struct Windows {
    /// Placements of pods bound longer ago than this are not sent: the Worker forgot their
    /// decision (its `DECISION_TTL_MS`).
    pub placement_ms: u64,
    /// Outcomes of pods bound longer ago than this are not sent (the Worker's `CONFIRMED_TTL_MS`).
    pub outcome_ms: u64,
}

#[derive(Debug, Default)]
pub struct Ledger {
    owed: HashMap<String, Owed>,
}

impl Ledger {
    /// The decision already made for pod `uid`, if any.
    pub fn decision(&self, uid: &str) -> Option<Decision> {
        self.owed.get(uid).and_then(|o| o.decision)
    }

    /// What to queue now for `pod`, given what was queued or acknowledged before. `None` when the
    /// pod owes nothing new. A placement whose end is already decided carries its outcome; a
    /// neutral end settles the outcome with nothing sent. `object` is the pod itself: a shadow
    /// report carries it (slimmed for the wire).
    pub fn plan(
        &mut self,
        pod: &BoundPod,
        object: &PodRecord,
        decision: Option<Decision>,
        now_ms: u64,
        windows: &Windows,
    ) -> Option<Item> {
        let age = now_ms.saturating_sub(pod.bound_at_ms);
        let owed = self.owed.entry(pod.uid.to_string()).or_default();
        if owed.decision.is_none() {
            owed.decision = decision;
        }
        let outcome = match owed.decision {
            Some(Decision::Report(o)) => Some(o),
            Some(Decision::Neutral) => {
                // Nothing to tell: the outcome is settled as it stands.
                owed.outcome_done = true;
                None
            }
            None => None,
        };
        let report = |outcome| PlacementReport {
            pod_uid: Some(pod.uid.clone()),
            namespace: Some(pod.namespace.clone()),
            name: Some(pod.name.clone()),
            tenant: Some(pod.tenant.clone()),
            node: pod.node.clone(),
            outcome,
        };
        let item = |kind: Kind, outcome| Item {
            kind,
            report: report(outcome),
            bound_at_ms: pod.bound_at_ms,
            pod: (pod.role == Role::Shadow).then(|| Arc::new(object.wire_pod())),
        };
        if !owed.placement_queued && !owed.placement_done && age <= windows.placement_ms {
            owed.placement_queued = true;
            owed.outcome_queued = outcome.is_some();
            return Some(item(Kind::placement(pod.role), outcome));
        }
        let placement_settled = owed.placement_done || age > windows.placement_ms;
        if let Some(o) = outcome {
            if placement_settled
                && !owed.outcome_queued
                && !owed.outcome_done
                && age <= windows.outcome_ms
            {
                owed.outcome_queued = true;
                return Some(item(Kind::outcome(pod.role), Some(o)));
            }
        }
        None
    }

    /// The Worker took the item (or refused it for good: retrying could never succeed).
    pub fn settle(&mut self, item: &Item) {
        let owed = self.owed.entry(item.uid().to_string()).or_default();
        if item.kind.is_placement() {
            owed.placement_queued = false;
            owed.placement_done = true;
            if item.report.outcome.is_some() {
                owed.outcome_queued = false;
                owed.outcome_done = true;
            }
        } else {
            owed.outcome_queued = false;
            owed.outcome_done = true;
        }
    }

    /// The item could not be queued (queue full): it will be planned again on the next scan.
    pub fn unqueue(&mut self, item: &Item) {
        if let Some(owed) = self.owed.get_mut(item.uid()) {
            if item.kind.is_placement() {
                owed.placement_queued = false;
                if item.report.outcome.is_some() {
                    owed.outcome_queued = false;
                }
            } else {
                owed.outcome_queued = false;
            }
        }
    }

    /// Forgets pods that are gone, unless something for them is still in the queue.
    pub fn retain(&mut self, alive: &HashSet<String>) {
        self.owed
            .retain(|uid, o| alive.contains(uid) || o.placement_queued || o.outcome_queued);
    }

    pub fn len(&self) -> usize {
        self.owed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.owed.is_empty()
    }
}

/// Everything a scan needs besides the pods.
pub struct ScanRules<'a> {
    pub schedulers: Schedulers<'a>,
    /// How the Worker reads a pod's tenant.
    pub pod_keys: &'a PodKeys,
    pub outcome_rules: OutcomeRules,
    pub windows: Windows,
    /// `--workload-label`: a pod label that names its workload (else its controller does).
    pub workload_label: Option<&'a str>,
}

/// What a scan found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Reports to queue, in a stable order.
    pub items: Vec<Item>,
    /// UIDs of the live pods seen (deleted ones are not alive).
    pub alive: HashSet<String>,
    /// Ends decided in this scan, by verdict kind and reason (for metrics and logs).
    pub decided: Vec<(&'static str, String)>,
    /// Pods not reported because the Worker would refuse their UID or node name:
    /// (`namespace/name`, the validator's reason), for the log.
    pub invalid: Vec<(String, String)>,
}

/// Plans the reports owed for every pod in `pods` (the reflector's store, and pods the watch
/// saw deleted), in a stable order.
pub fn scan<'a>(
    ledger: &mut Ledger,
    attribution: &mut Attribution,
    pods: impl IntoIterator<Item = (&'a PodRecord, Presence)>,
    rules: &ScanRules<'_>,
    now_ms: u64,
) -> Scan {
    let mut out = Scan::default();
    for (pod, presence) in pods {
        if !pod.uid.is_empty() && !presence.deleted {
            out.alive.insert(pod.uid.to_string());
        }
        let bound = match bound_pod(pod, &rules.schedulers, rules.pod_keys) {
            Ok(bound) => bound,
            Err(Skip::InvalidName(why)) => {
                out.invalid
                    .push((format!("{}/{}", pod.namespace, pod.name), why));
                continue;
            }
            Err(_) => continue,
        };
        let decision = match ledger.decision(&bound.uid) {
            Some(d) => Some(d),
            None => classify(pod, presence, now_ms, &rules.outcome_rules).and_then(|verdict| {
                let workload = workload_of(pod, rules.workload_label);
                let d = attribution.decide(&verdict, workload.as_deref(), &bound.node, &bound.uid);
                if d.is_some() {
                    out.decided.push((verdict.kind(), reason_of(&verdict)));
                }
                d
            }),
        };
        if let Some(item) = ledger.plan(&bound, pod, decision, now_ms, &rules.windows) {
            out.items.push(item);
        }
    }
    out.items.sort_by(|a, b| {
        a.bound_at_ms
            .cmp(&b.bound_at_ms)
            .then_with(|| a.uid().cmp(b.uid()))
    });
    out
}

fn reason_of(v: &Verdict) -> String {
    match v {
        Verdict::NodeFailed(r) | Verdict::Neutral(r) | Verdict::AppError(r) => r.clone(),
        Verdict::Succeeded { .. } => "Succeeded".into(),
        Verdict::Healthy => "Healthy".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aco_core::colony::{FailureCause, ObservedOutcome, Outcome, OutcomeLabel};
    use aco_core::config::Config;
    use serde_json::json;

    /// A failed outcome as the reporter sends it: with why the node failed the pod, unless it
    /// is the node's own (the plain label).
    fn failed_outcome(cause: FailureCause) -> Outcome {
        match cause {
            FailureCause::Node => Outcome::Label(OutcomeLabel::Failed),
            cause => Outcome::Observed(ObservedOutcome {
                quality: 0.0,
                cost_per_hour: None,
                slowdown: None,
                cause: Some(cause),
            }),
        }
    }

    fn succeeded() -> Outcome {
        Outcome::Label(OutcomeLabel::Succeeded)
    }

    /// A scan of live pods, with a fresh attribution memory (decisions stay in the ledger).
    fn scan_pods<const N: usize>(
        ledger: &mut Ledger,
        pods: [&PodRecord; N],
        rules: &ScanRules<'_>,
        now_ms: u64,
    ) -> (Vec<Item>, HashSet<String>) {
        let s = scan(
            ledger,
            &mut Attribution::default(),
            pods.into_iter().map(|p| (p, Presence::default())),
            rules,
            now_ms,
        );
        (s.items, s.alive)
    }

    const HOUR: u64 = 3_600_000;
    const WINDOWS: Windows = Windows {
        placement_ms: HOUR,
        outcome_ms: 6 * HOUR,
    };

    fn schedulers() -> Vec<String> {
        vec!["aco-scheduler".into()]
    }

    fn ours(s: &[String]) -> Schedulers<'_> {
        Schedulers {
            ours: s,
            shadow: &[],
        }
    }

    fn pod(
        uid: &str,
        scheduler: &str,
        node: Option<&str>,
        labels: serde_json::Value,
        phase: &str,
    ) -> PodRecord {
        // A Failed pod here failed by the node's doing (a kubelet eviction): an outcome is owed.
        let reason = (phase == "Failed").then_some("Evicted");
        crate::pod_record::tests::record(json!({
            "metadata": {"name": format!("p-{uid}"), "namespace": "team-a", "uid": uid, "labels": labels,
                         "creationTimestamp": "1970-01-01T00:00:01Z"},
            "spec": {"schedulerName": scheduler, "nodeName": node, "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": phase, "reason": reason, "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "1970-01-01T00:00:02Z"}]}
        }))
    }

    #[test]
    fn only_bound_pods_of_our_schedulers_with_the_workers_tenant() {
        let c = Config::default();
        let s = schedulers();
        let s = ours(&s);
        let p = pod(
            "u1",
            "aco-scheduler",
            Some("n1"),
            json!({"scheduling.aco/tenant-id": "ml"}),
            "Running",
        );
        let b = bound_pod(&p, &s, &c.pod_keys).unwrap();
        assert_eq!(
            (b.tenant.as_str(), b.node.as_str(), b.bound_at_ms),
            ("ml", "n1", 2_000)
        );
        let ns = pod("u2", "aco-scheduler", Some("n1"), json!({}), "Running");
        assert_eq!(bound_pod(&ns, &s, &c.pod_keys).unwrap().tenant, "team-a");
        assert_eq!(
            bound_pod(
                &pod("u3", "default-scheduler", Some("n1"), json!({}), "Running"),
                &s,
                &c.pod_keys
            ),
            Err(Skip::NotOurs)
        );
        assert_eq!(
            bound_pod(
                &pod("u4", "aco-scheduler", None, json!({}), "Pending"),
                &s,
                &c.pod_keys
            ),
            Err(Skip::NotBound)
        );
        let strict = Config::default()
            .with(|c| c.pod_keys.tenant_source = aco_core::config::TenantSource::Label);
        assert!(matches!(
            bound_pod(&ns, &s, &strict.pod_keys),
            Err(Skip::Tenant(_))
        ));
        // A node name or UID the Worker would refuse is skipped here, not sent to fail a batch.
        for (uid, node, needle) in [
            ("u5", "Node_5", "is not a valid Kubernetes name"),
            ("u 6", "n1", "is not a pod UID"),
        ] {
            let bad = pod(uid, "aco-scheduler", Some(node), json!({}), "Running");
            match bound_pod(&bad, &s, &c.pod_keys) {
                Err(Skip::InvalidName(why)) => assert!(why.contains(needle), "{why}"),
                other => panic!("{uid} on {node}: {other:?}"),
            }
            // A scan queues nothing for it and names it for the log.
            let names = schedulers();
            let found = scan(
                &mut Ledger::default(),
                &mut Attribution::default(),
                [(&bad, Presence::default())],
                &rules(&c, &names),
                10_000,
            );
            assert!(found.items.is_empty());
            assert_eq!(found.invalid.len(), 1, "{uid} on {node}");
            assert!(found.invalid[0].1.contains(needle), "{:?}", found.invalid);
        }
    }

    fn rules<'a>(config: &'a Config, schedulers: &'a [String]) -> ScanRules<'a> {
        ScanRules {
            schedulers: ours(schedulers),
            pod_keys: &config.pod_keys,
            outcome_rules: OutcomeRules::default(),
            windows: WINDOWS,
            workload_label: None,
        }
    }

    #[test]
    fn a_placement_is_owed_once_then_its_outcome_once() {
        let (config, schedulers) = (Config::default(), schedulers());
        let r = rules(&config, &schedulers);
        let mut ledger = Ledger::default();
        let running = pod("u1", "aco-scheduler", Some("n1"), json!({}), "Running");
        let (items, _) = scan_pods(&mut ledger, [&running], &r, 10_000);
        assert_eq!(items.len(), 1);
        assert_eq!(
            (items[0].kind, items[0].report.outcome),
            (Kind::Placement, None)
        );
        // Queued, not yet acknowledged: nothing new.
        assert!(scan_pods(&mut ledger, [&running], &r, 11_000).0.is_empty());
        ledger.settle(&items[0]);
        assert!(scan_pods(&mut ledger, [&running], &r, 12_000).0.is_empty());

        let failed = pod("u1", "aco-scheduler", Some("n1"), json!({}), "Failed");
        let (items, _) = scan_pods(&mut ledger, [&failed], &r, 13_000);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].kind, Kind::Outcome);
        assert_eq!(
            items[0].report.outcome,
            Some(failed_outcome(FailureCause::Load)),
            "Evicted: the node's load"
        );
        ledger.settle(&items[0]);
        assert!(scan_pods(&mut ledger, [&failed], &r, 14_000).0.is_empty());
    }

    #[test]
    fn a_known_fate_travels_with_the_placement() {
        let (config, schedulers) = (Config::default(), schedulers());
        let r = rules(&config, &schedulers);
        let mut ledger = Ledger::default();
        let done = pod("u1", "aco-scheduler", Some("n1"), json!({}), "Succeeded");
        let (items, _) = scan_pods(&mut ledger, [&done], &r, 10_000);
        assert_eq!(
            (items[0].kind, items[0].report.outcome),
            (Kind::Placement, Some(succeeded()))
        );
        ledger.settle(&items[0]);
        assert!(scan_pods(&mut ledger, [&done], &r, 11_000).0.is_empty());
    }

    #[test]
    fn a_full_queue_loses_nothing_the_item_is_planned_again() {
        let (config, schedulers) = (Config::default(), schedulers());
        let r = rules(&config, &schedulers);
        let mut ledger = Ledger::default();
        let running = pod("u1", "aco-scheduler", Some("n1"), json!({}), "Running");
        let (items, _) = scan_pods(&mut ledger, [&running], &r, 10_000);
        ledger.unqueue(&items[0]);
        assert_eq!(scan_pods(&mut ledger, [&running], &r, 11_000).0, items);
    }

    #[test]
    fn a_restarted_reporter_owes_recent_pods_again_and_old_ones_only_their_outcome() {
        let (config, schedulers) = (Config::default(), schedulers());
        let r = rules(&config, &schedulers);
        let running = pod("u1", "aco-scheduler", Some("n1"), json!({}), "Running");
        let failed = pod("u2", "aco-scheduler", Some("n1"), json!({}), "Failed");
        let mut fresh = Ledger::default();
        let (items, _) = scan_pods(&mut fresh, [&running, &failed], &r, 10_000);
        assert_eq!(items.len(), 2);
        // Two hours after binding: the decision is gone, the outcome is still useful.
        let mut later = Ledger::default();
        let (items, _) = scan_pods(&mut later, [&running, &failed], &r, 2 * HOUR);
        assert_eq!(items.len(), 1);
        assert_eq!((items[0].kind, items[0].uid()), (Kind::Outcome, "u2"));
        // Past the outcome window: nothing.
        assert!(
            scan_pods(&mut Ledger::default(), [&running, &failed], &r, 7 * HOUR)
                .0
                .is_empty()
        );
    }

    #[test]
    fn gone_pods_are_forgotten_unless_queued() {
        let (config, schedulers) = (Config::default(), schedulers());
        let r = rules(&config, &schedulers);
        let mut ledger = Ledger::default();
        let a = pod("a", "aco-scheduler", Some("n1"), json!({}), "Running");
        let b = pod("b", "aco-scheduler", Some("n1"), json!({}), "Running");
        let (items, _) = scan_pods(&mut ledger, [&a, &b], &r, 10_000);
        ledger.settle(&items[0]);
        ledger.retain(&HashSet::new());
        assert_eq!(ledger.len(), 1, "b is still queued");
    }

    fn shadow_rules<'a>(
        config: &'a Config,
        ours: &'a [String],
        shadow: &'a [String],
    ) -> ScanRules<'a> {
        ScanRules {
            schedulers: Schedulers { ours, shadow },
            pod_keys: &config.pod_keys,
            outcome_rules: OutcomeRules::default(),
            windows: WINDOWS,
            workload_label: None,
        }
    }

    #[test]
    fn shadow_pods_are_bound_pods_of_the_shadow_schedulers_and_not_of_ours() {
        let c = Config::default();
        let (o, sh) = (
            schedulers(),
            vec!["default-scheduler".to_string(), "aco-scheduler".to_string()],
        );
        let s = Schedulers {
            ours: &o,
            shadow: &sh,
        };
        let default = pod(
            "u1",
            "default-scheduler",
            Some("n1"),
            json!({"scheduling.aco/tenant-id": "ml"}),
            "Running",
        );
        let b = bound_pod(&default, &s, &c.pod_keys).unwrap();
        assert_eq!(
            (b.role, b.tenant.as_str(), b.node.as_str()),
            (Role::Shadow, "ml", "n1")
        );
        // A name in both lists is ours: its placements teach the colony.
        assert_eq!(
            bound_pod(
                &pod("u2", "aco-scheduler", Some("n1"), json!({}), "Running"),
                &s,
                &c.pod_keys
            )
            .unwrap()
            .role,
            Role::Ours
        );
        assert_eq!(
            bound_pod(
                &pod("u3", "other", Some("n1"), json!({}), "Running"),
                &s,
                &c.pod_keys
            ),
            Err(Skip::NotOurs)
        );
        assert_eq!(
            bound_pod(
                &pod("u4", "default-scheduler", None, json!({}), "Pending"),
                &s,
                &c.pod_keys
            ),
            Err(Skip::NotBound)
        );
        // No schedulerName (or an empty one) is the default scheduler, as the API server has it.
        let mut unnamed = default.clone();
        unnamed.scheduler = None;
        assert_eq!(
            bound_pod(&unnamed, &s, &c.pod_keys).unwrap().role,
            Role::Shadow
        );
        let empty = pod("u6", "", Some("n1"), json!({}), "Running");
        assert_eq!(
            empty.scheduler, None,
            "an empty schedulerName reads as none"
        );
        assert_eq!(
            bound_pod(&empty, &s, &c.pod_keys).unwrap().role,
            Role::Shadow
        );
        // Shadow mode off (the default): nothing of another scheduler is reported.
        assert_eq!(
            bound_pod(&default, &ours(&o), &c.pod_keys),
            Err(Skip::NotOurs)
        );
        let strict = Config::default()
            .with(|c| c.pod_keys.tenant_source = aco_core::config::TenantSource::Label);
        let unlabelled = pod("u5", "default-scheduler", Some("n1"), json!({}), "Running");
        assert!(matches!(
            bound_pod(&unlabelled, &s, &strict.pod_keys),
            Err(Skip::Tenant(_))
        ));
    }

    #[test]
    fn a_shadow_pod_is_owed_once_with_itself_then_its_outcome_once() {
        let config = Config::default();
        let (o, sh) = (schedulers(), vec!["default-scheduler".to_string()]);
        let r = shadow_rules(&config, &o, &sh);
        let mut ledger = Ledger::default();
        let running = pod("s1", "default-scheduler", Some("n2"), json!({}), "Running");
        let mine = pod("m1", "aco-scheduler", Some("n1"), json!({}), "Running");
        let (items, _) = scan_pods(&mut ledger, [&running, &mine], &r, 10_000);
        assert_eq!(items.len(), 2);
        let shadow = items.iter().find(|i| i.kind == Kind::Shadow).unwrap();
        let placement = items.iter().find(|i| i.kind == Kind::Placement).unwrap();
        assert_eq!(
            (shadow.kind.endpoint(), placement.kind.endpoint()),
            (Endpoint::Shadow, Endpoint::Placements)
        );
        assert!(
            placement.pod.is_none(),
            "a placement of ours does not carry the pod"
        );
        let carried = shadow.pod.as_deref().unwrap();
        assert_eq!(carried, &running.wire_pod());
        assert_eq!(
            (shadow.report.node.as_str(), shadow.report.outcome),
            ("n2", None)
        );
        assert!(
            scan_pods(&mut ledger, [&running, &mine], &r, 11_000)
                .0
                .is_empty(),
            "queued: nothing new"
        );
        for i in &items {
            ledger.settle(i);
        }
        assert!(scan_pods(&mut ledger, [&running], &r, 12_000).0.is_empty());

        // Its outcome, by the same rules, to the shadow endpoint.
        let failed = pod("s1", "default-scheduler", Some("n2"), json!({}), "Failed");
        let (items, _) = scan_pods(&mut ledger, [&failed], &r, 13_000);
        assert_eq!(items.len(), 1);
        assert_eq!(
            (items[0].kind, items[0].report.outcome),
            (
                Kind::ShadowOutcome,
                Some(failed_outcome(FailureCause::Load))
            )
        );
        assert_eq!(items[0].kind.endpoint(), Endpoint::Shadow);
        assert!(items[0].pod.is_some());
        ledger.unqueue(&items[0]);
        let again = scan_pods(&mut ledger, [&failed], &r, 14_000).0;
        assert_eq!(again, items, "a full queue loses nothing");
        ledger.settle(&again[0]);
        assert!(scan_pods(&mut ledger, [&failed], &r, 15_000).0.is_empty());

        // A restarted reporter owes the recent shadow pod again (the Worker counts a duplicate).
        let (items, _) = scan_pods(&mut Ledger::default(), [&failed], &r, 16_000);
        assert_eq!(
            (items[0].kind, items[0].report.outcome),
            (Kind::Shadow, Some(failed_outcome(FailureCause::Load)))
        );
        // Two hours later only its outcome; past the outcome window nothing.
        let (items, _) = scan_pods(&mut Ledger::default(), [&failed], &r, 2 * HOUR);
        assert_eq!(items[0].kind, Kind::ShadowOutcome);
        assert!(scan_pods(&mut Ledger::default(), [&failed], &r, 7 * HOUR)
            .0
            .is_empty());
    }

    #[test]
    fn neutral_ends_send_the_placement_alone_and_owe_no_outcome() {
        let (config, schedulers) = (Config::default(), schedulers());
        let r = rules(&config, &schedulers);
        let mut ledger = Ledger::default();
        let mut attribution = Attribution::default();
        let running = pod("u1", "aco-scheduler", Some("n1"), json!({}), "Running");
        let s1 = scan(
            &mut ledger,
            &mut attribution,
            [(&running, Presence::default())],
            &r,
            10_000,
        );
        ledger.settle(&s1.items[0]);
        // Scaled down: deleted (the watch's Deleted event), its node still there.
        let gone = Presence {
            deleted: true,
            node_gone: false,
        };
        let s2 = scan(
            &mut ledger,
            &mut attribution,
            [(&running, gone)],
            &r,
            11_000,
        );
        assert!(s2.items.is_empty(), "nothing to tell");
        assert_eq!(s2.decided, [("neutral", "Deleted".to_string())]);
        assert!(s2.alive.is_empty(), "a deleted pod is not alive");
        // A pod deleted with its node before its placement was delivered: both in one item.
        let orphan = pod("u2", "aco-scheduler", Some("n9"), json!({}), "Running");
        let with_node = Presence {
            deleted: true,
            node_gone: true,
        };
        let s3 = scan(
            &mut ledger,
            &mut attribution,
            [(&orphan, with_node)],
            &r,
            12_000,
        );
        assert_eq!(
            (s3.items[0].kind, s3.items[0].report.outcome),
            (
                Kind::Placement,
                Some(failed_outcome(FailureCause::NodeGone))
            )
        );
    }

    #[test]
    fn an_application_error_waits_for_the_workloads_history() {
        let (config, schedulers) = (Config::default(), schedulers());
        let r = rules(&config, &schedulers);
        let mut ledger = Ledger::default();
        let mut attribution = Attribution::default();
        let job_pod = |uid: &str, node: &str| {
            let mut p = pod(uid, "aco-scheduler", Some(node), json!({}), "Failed");
            p.controller = Some(("Job".into(), "j".into()));
            p.reason = None;
            p
        };
        let (a, b) = (job_pod("a", "n1"), job_pod("b", "n1"));
        let live = |p| (p, Presence::default());
        let first = scan(&mut ledger, &mut attribution, [live(&a)], &r, 10_000);
        assert_eq!(
            first.items[0].report.outcome, None,
            "placement only: undecided"
        );
        ledger.settle(&first.items[0]);
        // The second failure on the same node: b is the node's, and a too on the next scan.
        let second = scan(
            &mut ledger,
            &mut attribution,
            [live(&a), live(&b)],
            &r,
            11_000,
        );
        assert_eq!(
            (
                second.items.len(),
                second.items[0].uid(),
                second.items[0].report.outcome
            ),
            (1, "b", Some(failed_outcome(FailureCause::Node)))
        );
        let third = scan(
            &mut ledger,
            &mut attribution,
            [live(&a), live(&b)],
            &r,
            12_000,
        );
        assert_eq!(
            (
                third.items.len(),
                third.items[0].kind,
                third.items[0].report.outcome
            ),
            (1, Kind::Outcome, Some(failed_outcome(FailureCause::Node)))
        );
        assert_eq!(third.items[0].uid(), "a");
    }
}
