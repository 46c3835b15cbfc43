//! Views of the facts that several rules read the same way (a rule's own helpers stay in its
//! file; one that another rule needs moves here, so no rule imports from another rule's file).

pub mod container;
pub mod cuda_majors;
pub mod explained;
pub mod paths;
pub mod pci;
pub mod pins;
pub mod units;
pub mod wheels;
