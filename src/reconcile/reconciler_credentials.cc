// The Reconciler and a refused credential: what a pass says and leaves alone while the
// API refuses its listings (401 UNAUTHENTICATED, 403 PERMISSION_DENIED). The provider's
// message names the credentials, the code and what to do (provider/gcp_api_client.cc).
#include "reconcile/reconciler_internal.h"

namespace tpufleet {

// A listing that failed: a refusal is said once per pass and provider, in the API's
// words, by the first zone that met it (the same zone while it lasts: a zone not listed
// keeps its place at the head of the queue); anything else names what it listed.
void Reconciler::ListingFailed(const FleetPass& fp, const std::string& what,
                               const Status& status) {
  if (status.code() != StatusCode::kPermissionDenied) {
    Warn("listing " + what + ": " + status.message());
    return;
  }
  if (refused_.insert(fp.provider).second) {
    Warn("cannot list: " + status.message() +
         "; serve deletes and creates nothing it cannot list until then");
  }
}

// Whether the node is left alone this pass: it was not listed, and its provider's
// credentials were refused. Its record alone (a ttl due, an agent's notice) does not
// move serve to delete or create while it cannot see the cloud.
bool Reconciler::Refused(const FleetPass& fp, const NodeFacts& facts) const {
  return !facts.listed && refused_.count(fp.provider) > 0;
}

}  // namespace tpufleet
