//! `drivers/`: cpuidle and the ACPI idle routines.
pub mod acpi;
pub mod cpuidle;
