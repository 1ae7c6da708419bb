//! The simulation's plumbing between processes: sending a message over
//! the network (links, partitions, loss, latency), connections reset or
//! closed, delivering a message or a timer to the process it is for, and
//! timers.

use super::*;

impl Simulation {
    /// Sends a message over the network.
    pub(crate) fn send(&mut self, from: NodeId, to: NodeId, message: Message) {
        let sent = if self.trace_options.messages {
            Some(self.record(TraceKind::Sent {
                from,
                to,
                name: message.name(),
                summary: message.summary(),
                facts: Box::new(message.facts()),
            }))
        } else {
            None
        };
        let route = if matches!(message, Message::ProduceResponse { .. }) && self.network.take_produce_response_loss(to)
        {
            Err(network::DropReason::Injected)
        } else {
            self.network.route(from, to, self.now, &mut self.network_rng)
        };
        match route {
            Ok(_) if self.network.is_unaware(from, to) => {
                // Down a connection that already broke: lost like the
                // message that broke it.
                self.record_dropped(sent, from, to, &message, network::DropReason::ConnectionReset);
            }
            Ok(arrival) => {
                let connection = self.network.connection(from, to);
                self.push(
                    arrival,
                    Event::Deliver {
                        from,
                        to,
                        message,
                        sent,
                        sent_at: self.now,
                        connection,
                    },
                )
            }
            Err(reason) => {
                self.record_dropped(sent, from, to, &message, reason);
                self.connection_reset(from, to);
                // Neither end knows yet: each learns one latency later.
                for (node, peer) in [(from, to), (to, from)] {
                    if self.node_running(node) {
                        self.network.mark_unaware(node, peer);
                    }
                }
            }
        }
    }

    /// The connection between `a` and `b` broke (a message on it could not
    /// get through): what is still in flight on it is discarded, and each
    /// end that is running is told, one network latency later, as a
    /// `ConnectionClosed` from the other (Kafka's clients see a disconnect
    /// and fail the requests in flight on it).
    pub(crate) fn connection_reset(&mut self, a: NodeId, b: NodeId) {
        if a == b {
            return;
        }
        let connection = self.network.reset(a, b);
        let latency = self.network.config.latency_ms;
        for (node, peer) in [(a, b), (b, a)] {
            if !self.node_running(node) {
                // A process that is gone starts over with new connections.
                self.network.mark_aware(node, peer);
                continue;
            }
            self.push(
                self.now + latency,
                Event::Deliver {
                    from: peer,
                    to: node,
                    message: Message::ConnectionClosed,
                    sent: None,
                    sent_at: self.now,
                    connection,
                },
            );
        }
    }

    /// `client` closes its connection to `peer` itself (a request timed
    /// out: `NetworkClient#handleTimedOutRequests`): it knows at once, the
    /// peer notices one latency later, and nothing still in flight on the
    /// old connection arrives (a request the peer has already read is
    /// still handled; its answer is lost).
    pub(crate) fn connection_closed_by(&mut self, client: NodeId, peer: NodeId) {
        let connection = self.network.reset(client, peer);
        if !self.node_running(peer) {
            return;
        }
        let latency = self.network.config.latency_ms;
        self.push(
            self.now + latency,
            Event::Deliver {
                from: client,
                to: peer,
                message: Message::ConnectionClosed,
                sent: None,
                sent_at: self.now,
                connection,
            },
        );
    }

    /// Whether a node's process runs (a paused broker counts as running).
    pub(super) fn node_running(&self, node: NodeId) -> bool {
        match node {
            NodeId::Controller(id) => self.controller_alive(id),
            NodeId::Broker(id) => self.broker_processes.get(&id).copied().unwrap_or(false),
            NodeId::Producer(id) => (id as usize) < self.producers.len(),
            NodeId::Consumer(id) => self.consumer_processes.get(id as usize).copied().unwrap_or(false),
        }
    }

    /// Records that a message never arrived.
    pub(super) fn record_dropped(
        &mut self,
        sent: Option<TraceId>,
        from: NodeId,
        to: NodeId,
        message: &Message,
        reason: network::DropReason,
    ) {
        self.record_caused(
            sent,
            TraceKind::Dropped {
                from,
                to,
                name: message.name(),
                reason,
            },
        );
    }

    /// Sets a timer on `node` that fires after `delay_ms`.
    pub(crate) fn schedule_timer(&mut self, node: NodeId, incarnation: u32, delay_ms: Time, timer: Timer) {
        let cause = self.current_cause;
        self.push(
            self.now.saturating_add(delay_ms),
            Event::Timer {
                node,
                incarnation,
                timer,
                cause,
            },
        );
    }

    pub(super) fn deliver(
        &mut self,
        from: NodeId,
        to: NodeId,
        message: Message,
        sent: Option<TraceId>,
        sent_at: Time,
        connection: u32,
    ) {
        if message == Message::ConnectionClosed && connection == self.network.connection(from, to) {
            self.network.mark_aware(to, from);
        }
        if connection != self.network.connection(from, to) {
            // Its connection broke while it travelled.
            if sent.is_some() {
                self.record_dropped(sent, from, to, &message, network::DropReason::ConnectionReset);
            }
            return;
        }
        if message == Message::ConnectionClosed && !self.node_running(to) {
            return;
        }
        if let NodeId::Controller(id) = to {
            if !self.controller_alive(id) {
                // Nobody listens: the connection is refused.
                self.record_dropped(sent, from, to, &message, network::DropReason::Lost);
                self.connection_reset(from, to);
                return;
            }
        }
        if let NodeId::Broker(id) = to {
            match self.brokers.get(&id).map(|broker| broker.status) {
                Some(broker::BrokerStatus::Dead) | None => {
                    // A client whose broker process is gone sees its
                    // connection fail (NetworkException) and looks again.
                    let failure = match &message {
                        Message::Produce { request, batches, .. } => Some(Message::ProduceResponse {
                            request: *request,
                            responses: batches
                                .iter()
                                .map(|(partition, _)| (partition.clone(), Err(types::ErrorCode::NetworkException)))
                                .collect(),
                            throttle_time_ms: 0,
                        }),
                        Message::ConsumerFetch { partition, .. } => Some(Message::consumer_fetch_error(
                            partition.clone(),
                            types::ErrorCode::NotLeaderOrFollower,
                        )),
                        // A group request (JoinGroup, Heartbeat, ...) fails
                        // with the connection; the consumer looks again.
                        _ if matches!(from, NodeId::Consumer(_)) => Some(Message::ConnectionClosed),
                        // A producer's metadata request: connection refused.
                        Message::MetadataRequest | Message::InitProducerId { .. }
                            if matches!(from, NodeId::Producer(_)) =>
                        {
                            Some(Message::ConnectionClosed)
                        }
                        _ => None,
                    };
                    if let (Some(failure), NodeId::Producer(_) | NodeId::Consumer(_)) = (failure, from) {
                        let latency = self.network.config.latency_ms;
                        self.push(
                            self.now + latency,
                            Event::Deliver {
                                from: to,
                                to: from,
                                message: failure,
                                sent,
                                sent_at: self.now,
                                connection,
                            },
                        );
                    }
                    self.record_dropped(sent, from, to, &message, network::DropReason::Lost);
                    if let NodeId::Broker(_) = from {
                        // A broker's connection to a dead broker is refused.
                        self.connection_reset(from, to);
                    }
                    return;
                }
                Some(broker::BrokerStatus::Paused { .. } | broker::BrokerStatus::Running) => {}
            }
        }
        let paused_until = match to {
            NodeId::Broker(id) => match self.brokers.get(&id).map(|broker| broker.status) {
                Some(broker::BrokerStatus::Paused { until }) => Some(until),
                _ => None,
            },
            NodeId::Consumer(id) => self.consumer_paused_until(id),
            _ => None,
        };
        if let Some(until) = paused_until {
            // A paused process reads its socket when it resumes.
            self.push(
                until,
                Event::Deliver {
                    from,
                    to,
                    message,
                    sent,
                    sent_at,
                    connection,
                },
            );
            return;
        }
        self.current_cause = if self.trace_options.messages {
            Some(self.record_caused(
                sent,
                TraceKind::Delivered {
                    from,
                    to,
                    name: message.name(),
                },
            ))
        } else {
            sent
        };
        match to {
            NodeId::Controller(id) => self.controller_deliver(id, from, message),
            NodeId::Broker(id) => self.broker_receive(id, from, message),
            NodeId::Producer(id) => self.producer_receive(id, from, message),
            NodeId::Consumer(id) => self.consumer_receive(id, from, message),
        }
    }

    pub(super) fn fire_timer(&mut self, node: NodeId, incarnation: u32, timer: Timer) {
        // A paused process runs its timers when it resumes.
        let paused_until = match node {
            NodeId::Broker(id) if timer != Timer::PauseEnd => match self.brokers.get(&id) {
                Some(broker) if broker.incarnation == incarnation => match broker.status {
                    broker::BrokerStatus::Paused { until } => Some(until),
                    _ => None,
                },
                _ => None,
            },
            NodeId::Consumer(id) if timer != Timer::ConsumerPauseEnd => self.consumer_paused_until(id),
            _ => None,
        };
        if let Some(until) = paused_until {
            let cause = self.current_cause;
            self.push(
                until,
                Event::Timer {
                    node,
                    incarnation,
                    timer,
                    cause,
                },
            );
            return;
        }
        match node {
            NodeId::Controller(id) => self.quorum_timer(id, incarnation, timer),
            NodeId::Broker(id) => {
                let Some(broker) = self.brokers.get(&id) else { return };
                if broker.incarnation == incarnation && broker.status != broker::BrokerStatus::Dead {
                    self.broker_timer(id, timer);
                }
            }
            NodeId::Producer(id) => self.producer_timer(id, timer),
            NodeId::Consumer(id) => self.consumer_timer(id, incarnation, timer),
        }
    }
}
