fn main() {
    std::process::exit(schedsim::cli::main());
}
