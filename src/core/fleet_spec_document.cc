// The shape of a fleet spec document as a whole: one YAML document, whose aliases do
// not make it blow up when walked (fleet_spec_internal.h).
#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include "core/fleet_spec_internal.h"

namespace tpufleet::fleet_spec_internal {
namespace {

// Errors about the document as a whole need a location; yaml-cpp marks are 0-based.
std::string Where(std::string_view origin, const YAML::Mark& mark) {
  return std::string(origin) + ":" + std::to_string(mark.line + 1) + ":" +
         std::to_string(mark.column + 1);
}

// Counts what a document would grow to if its aliases were copied out, without copying:
// a node's size is 1 plus its children's (a scalar adds its bytes), an alias adds the
// size of the node it names. Sizes saturate just past the limit, so nothing overflows.
class ExpansionCounter : public YAML::EventHandler {
 public:
  explicit ExpansionCounter(size_t limit) : limit_(limit) {}

  bool over_limit() const { return over_; }
  const YAML::Mark& over_mark() const { return over_mark_; }
  bool cyclic() const { return cyclic_; }
  const YAML::Mark& cyclic_mark() const { return cyclic_mark_; }
  int documents() const { return documents_; }
  const YAML::Mark& document_mark() const { return document_mark_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2) {
      document_mark_ = mark;
    }
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor, 1); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = sizes_.find(anchor);
    if (it == sizes_.end()) {
      // The anchor is still open: the alias sits inside the node it names.
      if (!cyclic_) {
        cyclic_ = true;
        cyclic_mark_ = mark;
      }
      Add(mark, 1);
      return;
    }
    Add(mark, it->second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    Leaf(mark, anchor, 1 + value.size());
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open_.push_back({anchor, 1, mark});
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open_.push_back({anchor, 1, mark});
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Open {
    YAML::anchor_t anchor;
    size_t size;
    YAML::Mark mark;
  };

  size_t Sum(size_t a, size_t b) const { return std::min(limit_ + 1, a + std::min(b, limit_ + 1)); }

  void Add(const YAML::Mark& mark, size_t n) {
    size_t& target = open_.empty() ? total_ : open_.back().size;
    target = Sum(target, n);
    if (target > limit_ && !over_) {
      over_ = true;
      over_mark_ = mark;
    }
  }
  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, size_t n) {
    n = std::min(n, limit_ + 1);
    if (anchor != 0) {
      sizes_[anchor] = n;
    }
    Add(mark, n);
  }
  void Close() {
    if (open_.empty()) {
      return;
    }
    Open done = open_.back();
    open_.pop_back();
    if (done.anchor != 0) {
      sizes_[done.anchor] = done.size;
    }
    Add(done.mark, done.size);
  }

  size_t limit_;
  size_t total_ = 0;
  std::vector<Open> open_;
  std::map<YAML::anchor_t, size_t> sizes_;
  bool over_ = false;
  YAML::Mark over_mark_;
  bool cyclic_ = false;
  YAML::Mark cyclic_mark_;
  int documents_ = 0;
  YAML::Mark document_mark_;
};

}  // namespace

Status CheckDocumentShape(std::string_view text, std::string_view origin) {
  std::istringstream in{std::string(text)};
  ExpansionCounter counter(kMaxExpandedSize);
  try {
    YAML::Parser parser(in);
    if (parser.HandleNextDocument(counter)) {
      parser.HandleNextDocument(counter);
    }
  } catch (const YAML::Exception& e) {
    // Only a later document can fail here; the first one already parsed.
    return InvalidArgumentError(Where(origin, e.mark) + ": not valid YAML: " + e.msg);
  }
  if (counter.documents() > 1) {
    return InvalidArgumentError(Where(origin, counter.document_mark()) +
                                ": a second YAML document starts here (---); a fleet spec is "
                                "one document");
  }
  if (counter.cyclic()) {
    return InvalidArgumentError(Where(origin, counter.cyclic_mark()) +
                                ": this alias refers to a node that contains it");
  }
  if (counter.over_limit()) {
    return InvalidArgumentError(Where(origin, counter.over_mark()) +
                                ": with its aliases (*name) expanded, the spec grows past " +
                                std::to_string(kMaxExpandedSize >> 20) +
                                " MiB; use fewer aliases to large nodes");
  }
  return Status::Ok();
}

}  // namespace tpufleet::fleet_spec_internal
