fn main() {
    schedsim::crash::install_hook();
    std::process::exit(schedsim::cli::main());
}
