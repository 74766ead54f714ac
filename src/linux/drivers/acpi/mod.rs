//! `drivers/acpi/`.
pub mod processor_idle;
