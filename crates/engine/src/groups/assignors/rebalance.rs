//! A whole group's rebalances as a learner steps through them: members
//! join or leave, and each rebalance runs one round (eager assignors) or
//! rounds until nothing is withheld (cooperative-sticky: a partition moving
//! between members is first revoked, then assigned in a follow-up round).

use serde::{Deserialize, Serialize};

use super::{assign_explained, AssignError, AssignmentReport, GroupInput, Member, Strategy};

/// A change to the group's membership.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MembershipChange {
    /// Members that join (their `owned` is ignored: new members own nothing).
    #[serde(default)]
    pub join: Vec<Member>,
    /// Member ids that leave.
    #[serde(default)]
    pub leave: Vec<String>,
}

/// One rebalance round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RebalanceRound {
    /// Which membership change (0 = the initial group) this round belongs to.
    pub change: usize,
    /// The generation the round produces.
    pub generation: i32,
    /// The members in this round, with what they owned going in.
    pub members: Vec<Member>,
    /// The assignment and its report.
    pub report: AssignmentReport,
}

/// Runs the initial assignment of `group`, then one rebalance per change.
/// Cooperative rounds repeat (at most 5 times) while partitions are withheld.
pub fn rebalance(
    strategy: Strategy,
    group: &GroupInput,
    changes: &[MembershipChange],
) -> Result<Vec<RebalanceRound>, AssignError> {
    let mut rounds = Vec::new();
    let mut members: Vec<Member> = group.members.clone();
    let mut generation = 0;
    for change_index in 0..=changes.len() {
        if change_index > 0 {
            let change = &changes[change_index - 1];
            members.retain(|member| !change.leave.contains(&member.member_id));
            for joiner in &change.join {
                members.retain(|member| member.member_id != joiner.member_id);
                members.push(Member {
                    owned: Vec::new(),
                    generation: None,
                    ..joiner.clone()
                });
            }
        }
        for _ in 0..5 {
            generation += 1;
            let input = GroupInput {
                members: members.clone(),
                ..group.clone()
            };
            let report = assign_explained(strategy, &input)?;
            let withheld = !report.withheld.is_empty();
            // What each member owns next: its new assignment.
            for member in &mut members {
                member.owned = report.assignment.get(&member.member_id).cloned().unwrap_or_default();
                member.generation = Some(generation);
            }
            rounds.push(RebalanceRound {
                change: change_index,
                generation,
                members: input.members,
                report,
            });
            if !withheld {
                break;
            }
        }
    }
    Ok(rounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str) -> Member {
        Member {
            member_id: id.into(),
            topics: vec!["t".into()],
            ..Member::default()
        }
    }

    #[test]
    fn cooperative_moves_take_two_rounds_and_eager_one() {
        let group = GroupInput {
            topics: [("t".to_string(), 4)].into_iter().collect(),
            members: vec![member("a"), member("b")],
            ..GroupInput::default()
        };
        let changes = vec![MembershipChange {
            join: vec![member("c")],
            leave: vec![],
        }];
        let cooperative = rebalance(Strategy::CooperativeSticky, &group, &changes).expect("valid");
        let after_join: Vec<&RebalanceRound> = cooperative.iter().filter(|round| round.change == 1).collect();
        assert_eq!(after_join.len(), 2, "revoke first, then assign");
        assert!(!after_join[0].report.withheld.is_empty());
        assert!(after_join[1].report.withheld.is_empty());
        assert!(after_join[1].report.assignment["c"].len() == 1);
        // In the first round nobody is handed a partition another still owns.
        for (member, partitions) in &after_join[0].report.assignment {
            for partition in partitions {
                let owned_elsewhere = after_join[0]
                    .members
                    .iter()
                    .any(|other| &other.member_id != member && other.owned.contains(partition));
                assert!(!owned_elsewhere, "{partition}");
            }
        }
        let eager = rebalance(Strategy::Sticky, &group, &changes).expect("valid");
        assert_eq!(eager.iter().filter(|round| round.change == 1).count(), 1);
    }
}
