//! The KRaft controller's rules for partitions: who leads, who is in sync,
//! and which epochs change when (`metadata/.../controller/`).

pub mod cluster_control;
pub mod partition_change;
