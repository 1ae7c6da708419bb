//! A run you can scrub: step forward, seek to any event, and fork.
//!
//! A run is a fold over its inputs, so any point can be rebuilt by
//! replaying from the start. A [`Recording`] keeps a snapshot every
//! `interval` events; seeking restores the nearest earlier snapshot and
//! replays at most `interval` events. Forking discards the inputs scheduled
//! after the current point (the old future) so new ones can be added. The
//! trace lives here, outside the snapshots, so snapshots stay small.

use super::config::ScheduledInput;
use super::trace::TraceEvent;
use super::Simulation;

/// A simulation with its history.
#[derive(Debug, Clone)]
pub struct Recording {
    current: Simulation,
    /// (events processed, the simulation at that point, trace length).
    snapshots: Vec<(u64, Simulation, usize)>,
    /// The trace of the whole known timeline; `visible` of it is the past.
    trace: Vec<TraceEvent>,
    visible: usize,
    interval: u64,
}

impl Recording {
    /// Starts recording `simulation` (inputs already scheduled), keeping a
    /// snapshot every `interval` events.
    pub fn new(mut simulation: Simulation, interval: u64) -> Recording {
        let trace = simulation.take_trace();
        let snapshot = simulation.clone();
        let trace_len = trace.len();
        Recording {
            snapshots: vec![(simulation.events_processed(), snapshot, trace_len)],
            current: simulation,
            visible: trace_len,
            trace,
            interval: interval.max(1),
        }
    }

    /// The simulation at the current point.
    pub fn simulation(&self) -> &Simulation {
        &self.current
    }

    /// The trace up to the current point.
    pub fn trace(&self) -> &[TraceEvent] {
        &self.trace[..self.visible]
    }

    /// Events processed up to the current point.
    pub fn position(&self) -> u64 {
        self.current.events_processed()
    }

    /// Processes one event. Returns `false` when nothing is left.
    pub fn step(&mut self) -> bool {
        let position = self.current.events_processed();
        if position % self.interval == 0 && self.snapshots.last().is_none_or(|(at, _, _)| *at < position) {
            self.snapshots.push((position, self.current.clone(), self.visible));
        }
        let stepped = self.current.step();
        let new = self.current.take_trace();
        if self.visible + new.len() <= self.trace.len() {
            // Replaying a known stretch: the run is deterministic, so the
            // events are the ones already recorded.
            debug_assert!(
                new.iter().zip(&self.trace[self.visible..]).all(|(a, b)| a == b),
                "replay diverged"
            );
            self.visible += new.len();
        } else {
            self.trace.truncate(self.visible);
            self.trace.extend(new);
            self.visible = self.trace.len();
        }
        stepped
    }

    /// Runs until virtual time `until_ms`.
    pub fn run_until(&mut self, until_ms: u64) {
        while self.current.next_event_time().is_some_and(|time| time <= until_ms) {
            self.step();
        }
    }

    /// Goes to the point after `events` events, backwards or forwards:
    /// from the nearest snapshot at or before it, unless the current point
    /// is nearer.
    pub fn seek(&mut self, events: u64) {
        let position = self.position();
        let index = self
            .snapshots
            .partition_point(|(at, _, _)| *at <= events)
            .saturating_sub(1);
        let (at, snapshot, trace_len) = &self.snapshots[index];
        if events < position || *at > position {
            self.current = snapshot.clone();
            self.visible = *trace_len;
        }
        while self.position() < events && self.step() {}
    }

    /// Forks at the current point: the inputs scheduled later are dropped
    /// and `inputs` are scheduled instead. Snapshots of the old future go,
    /// and so does one taken at this very point (it holds the old inputs);
    /// the forked point is snapshotted instead, so a seek to anywhere after
    /// it replays the new future, never the old one from an earlier
    /// snapshot.
    pub fn fork(&mut self, inputs: Vec<ScheduledInput>) {
        let position = self.position();
        self.snapshots.retain(|(at, _, _)| *at < position);
        self.trace.truncate(self.visible);
        self.current.discard_future_inputs();
        for input in inputs {
            self.current.schedule(input);
        }
        self.snapshots.push((position, self.current.clone(), self.visible));
    }
}
