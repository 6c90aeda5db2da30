# Sections 6 and 6b of fleet_e2e_test.sh, which sources it in its place (same shell,
# same emulator, the checks numbered on): `import` of a node made by hand, and a node
# that carries a fleet's label but has no record.

# ---------------------------------------------------------------------------------
note "6. import a node made by hand"
zi=us-east5-b
ssh-keygen -q -t ed25519 -N '' -C alice -f "$tmp/alice"
alice_entry="alice:$(cut -d' ' -f1,2 "$tmp/alice.pub") alice"
make_by_hand() {
  ecurl -sf --max-time 20 -X POST "$ep$(zone_api $zi)/nodes?nodeId=handmade" \
    -H 'Content-Type: application/json' \
    -d "$(jq -n --arg k "$alice_entry" \
      '{acceleratorType: "v5litepod-4", runtimeVersion: "v2-alpha-tpuv5-lite", metadata: {"ssh-keys": $k}}')" \
    >/dev/null || return 1
  wait_for 30 eval '[[ $(api "$(zone_api $zi)/nodes/handmade" | jq -r .state) == READY ]]'
}
check "a node made through the API with curl (alice's key, no labels) becomes READY" make_by_hand
remember_hosts
import_it() {
  tf import --provider emulator --project $project --zones $zi handmade >"$tmp/import.txt" 2>&1 ||
    { cat "$tmp/import.txt"; return 1; }
}
check "tpufleet import --provider emulator --project $project --zones $zi handmade" import_it
ssh_imported() {
  local out want
  out=$(on handmade hostname) || return 1
  want=$(ecurl -s --max-time 20 -X POST "$ep$(zone_api $zi)/nodes/handmade:getGuestAttributes" \
    -H 'Content-Type: application/json' -d '{}' | jq -r '.guestAttributes[0].queryValue.items[] | select(.key == "hostname") | .value')
  [[ $out == "$want" ]] || { echo "handmade says '$out', its guest attributes '$want'"; return 1; }
}
check "ssh -F STATE/ssh/config handmade hostname works" ssh_imported
keeps_keys() {
  local keys
  keys=$(api "$(zone_api $zi)/nodes/handmade" | jq -r '.metadata["ssh-keys"]')
  grep -qxF "$alice_entry" <<<"$keys" || { echo "ssh-keys now: $keys"; return 1; }
  [[ $(wc -l <<<"$keys") == 2 ]] || { echo "ssh-keys now: $keys"; return 1; }
}
check "handmade's ssh-keys still hold alice's key (and the fleet key)" keeps_keys
alice_logs_in() {
  local addr
  addr=$(api "$(zone_api $zi)/nodes/handmade" | jq -r '.networkEndpoints[0].ipAddress')
  timeout 30 ssh -F /dev/null -i "$tmp/alice" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$state/ssh/known_hosts" \
    -o LogLevel=ERROR "alice@$addr" 'id -un' | grep -qx alice
}
check "alice still logs in to handmade with her own key" alice_logs_in
imported_status() {
  status_json handmade || return 1
  [[ $(field handmade .fleet) == imported && $(field handmade .zone) == "$zi" &&
     $(field handmade .state) == READY ]] || { cat "$tmp/status.json"; return 1; }
}
check "status shows handmade READY in fleet imported" imported_status

# ---------------------------------------------------------------------------------
note "6b. a node with fleet late's label but no record (issue 10)"
make_stray() {
  ecurl -sf --max-time 20 -X POST "$ep$(zone_api $zc)/nodes?nodeId=stray" \
    -H 'Content-Type: application/json' \
    -d '{"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base",
         "labels": {"tpufleet-fleet": "late"}}' >/dev/null || return 1
  wait_for 30 eval '[[ $(api "$(zone_api $zc)/nodes/stray" | jq -r .state) == READY ]]'
}
check "a node made with curl, labelled tpufleet-fleet=late, becomes READY in $zc" make_stray
remember_hosts
stray_in_status() {
  tf status >"$tmp/status-local.txt" 2>&1 || { cat "$tmp/status-local.txt"; return 1; }
  ! grep -q stray "$tmp/status-local.txt" || { cat "$tmp/status-local.txt"; return 1; }
  status_json --refresh || { cat "$tmp/status.json"; return 1; }
  jq -e --arg z "$zc" 'any(.untracked[]; .node == "stray" and .zone == $z and .fleet == "late")' \
    "$tmp/status.json" >/dev/null || { cat "$tmp/status.json"; return 1; }
}
check "status --refresh (not plain status) reports stray as untracked" stray_in_status
stray_in_up() {
  tf up "$tmp/late.yaml" >"$tmp/late-3.txt" 2>&1 || { cat "$tmp/late-3.txt"; return 1; }
  grep -q "untracked: stray in $zc carries fleet late's label" "$tmp/late-3.txt" ||
    { cat "$tmp/late-3.txt"; return 1; }
  [[ $(api "$(zone_api $zc)/nodes/stray" | jq -r .state) == READY ]] ||
    { echo "up touched stray"; return 1; }
}
check "up of fleet late reports stray as untracked and leaves it alone" stray_in_up
delete_stray() {
  ecurl -sf --max-time 20 -X DELETE "$ep$(zone_api $zc)/nodes/stray" >/dev/null || return 1
  wait_for 30 eval '[[ -z $(cloud_nodes $zc | grep " stray ") ]]'
}
check "stray deleted through the API" delete_stray

