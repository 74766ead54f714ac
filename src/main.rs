fn main() {
    schedsim::crash::install_hook();
    schedsim::cli::signals::install();
    std::process::exit(schedsim::cli::main());
}
