//! `latlab-net`: see [`latlab_net::cli`]. Exit codes: 0 done, 1 a run-time
//! failure (e.g. the address cannot be bound), 2 bad command-line input.

use std::process::ExitCode;

use clap::Parser;
use latlab_net::cli::{Cli, Command, MediaCommand};
use latlab_net::{clock, emulate, flows, media, mptcp, proxy, recv};

fn main() -> ExitCode {
    // clap prints its own message and exits with 2 on bad input (0 for
    // --help and --version).
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Media(MediaCommand::Send(args)) => match args.options() {
            Ok(opts) => {
                clock::install_stop_handlers();
                media::sender::run(&opts).map(|_| ())
            }
            Err(msg) => return usage_error(&msg),
        },
        Command::Media(MediaCommand::Recv(args)) => match args.options() {
            Ok(opts) => {
                clock::install_stop_handlers();
                media::receiver::run(&opts).map(|_| ())
            }
            Err(msg) => return usage_error(&msg),
        },
        Command::Emulate(args) => match args.options() {
            Ok(opts) => {
                clock::install_stop_handlers();
                return match emulate::run(&opts) {
                    Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
                    Err(msg) => {
                        eprintln!("error: {msg}");
                        ExitCode::FAILURE
                    }
                };
            }
            Err(msg) => return usage_error(&msg),
        },
        Command::Flows(args) if args.plan => {
            // A scenario that cannot be emulated is bad input: exit code 2.
            return match flows::plan::load(&args.scenario) {
                Ok(plan) => {
                    println!("{}", serde_json::to_string(&plan).expect("plain struct"));
                    ExitCode::SUCCESS
                }
                Err(msg) => usage_error(&msg),
            };
        }
        Command::Flows(args) => match args.options() {
            Ok(opts) => {
                // Unsupported scenarios are refused before any socket exists.
                if let Err(msg) = flows::plan::load(&opts.scenario) {
                    return usage_error(&msg);
                }
                clock::install_stop_handlers();
                return match flows::run(&opts) {
                    Ok(true) => ExitCode::SUCCESS,
                    Ok(false) => ExitCode::FAILURE,
                    Err(msg) => {
                        eprintln!("error: {msg}");
                        ExitCode::FAILURE
                    }
                };
            }
            Err(msg) => return usage_error(&msg),
        },
        Command::Proxy(args) => match args.options() {
            Ok(opts) => {
                clock::install_stop_handlers();
                return match proxy::run(&opts) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(msg) => {
                        eprintln!("error: {msg}");
                        ExitCode::FAILURE
                    }
                };
            }
            Err(msg) => return usage_error(&msg),
        },
        Command::Recv(args) => match args.options() {
            Ok(opts) => {
                clock::install_stop_handlers();
                recv::run(&opts).map(|_| ())
            }
            Err(msg) => return usage_error(&msg),
        },
        Command::MptcpWatch(args) => {
            clock::install_stop_handlers();
            return match mptcp::watch::run(&args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(msg) => {
                    eprintln!("error: {msg}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}
