// Small string helpers shared by every module: splitting, trimming, edit distance
// for "did you mean" suggestions, the duration syntax used in specs and flags, and a
// stable string hash.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace tpufleet {

std::vector<std::string> Split(std::string_view text, char sep);
std::string_view Trim(std::string_view text);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
bool StartsWith(std::string_view text, std::string_view prefix);
/// `text` with A-Z as a-z (header names, wire enum names); other bytes as they are.
std::string AsciiLower(std::string_view text);

/// Levenshtein distance between two strings.
size_t EditDistance(std::string_view a, std::string_view b);

/// Up to `max` candidates closest to `query`, nearest first, among those whose edit
/// distance is small relative to their length (a guess a person would recognise).
/// Ties keep the candidates' order. Empty when nothing is close.
std::vector<std::string> NearestNames(std::string_view query,
                                      const std::vector<std::string>& candidates,
                                      size_t max = 3);

/// " (did you mean a, b or c?)" for NearestNames' answer, or "" when it is empty.
std::string DidYouMean(std::string_view query, const std::vector<std::string>& candidates);

/// Parses "90s", "30m", "6h", "2d", "1h30m", or a bare number of seconds; at most
/// 2^40 seconds, never negative.
Result<std::chrono::seconds> ParseDuration(std::string_view text);

/// "1h30m", "2d", "45s": the shortest exact form ParseDuration reads back.
std::string FormatDuration(std::chrono::seconds d);

/// Parses a whole decimal number; false on anything else (sign, spaces, overflow).
bool ParseInt(std::string_view text, long long* out);
/// Parses a finite decimal number such as "12", "0.5" or "1e3"; false otherwise.
bool ParseDouble(std::string_view text, double* out);

/// 64-bit FNV-1a of `text`: a stable, non-cryptographic hash for made-up ids and ETags
/// that must come out the same in every process and on every run. Its offset basis,
/// 1469598103934665603, is one digit short of the published one; the emulator's ids
/// were made with it, so it stays.
uint64_t Fnv1a64(std::string_view text);

/// `text` as one word for a POSIX shell: wrapped in single quotes, each ' written as
/// '\''. The shell that reads it gets `text` back byte for byte, whatever it holds
/// ($, `, ;, newlines, quotes). Plain words made only of [A-Za-z0-9_./:@%+,-] (not =, which would make
/// a first word an assignment) stay bare.
std::string ShellQuote(std::string_view text);

/// The words quoted with ShellQuote and joined by spaces: a command line a shell runs
/// exactly as the words were given.
std::string ShellJoin(const std::vector<std::string>& words);

/// A size for people: "512 bytes", "64 KiB", "1 MiB", "3.2 GiB" (one decimal unless whole).
std::string FormatBytes(uint64_t bytes);

/// "$1,234.56" style money, two decimals ("-$0.25" below zero, "$inf" when not finite).
std::string FormatUsd(double usd);

}  // namespace tpufleet
