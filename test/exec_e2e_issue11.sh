# Sourced by exec_e2e_test.sh once its fleet of four v4-32 nodes is up (its helpers,
# $tmp, $state, $tmp/status.json and $tmp/want.all are this file's): issue 11's checks.
#   - Run as root with SUDO_USER set (as sudo leaves it), the fleet's login is that user's
#     name: the SSH names' User, and whoami on a worker.
#   - k. Three ssh-hosts nodes beside the fleet: one whose key is in a hashed known_hosts
#     comes up and answers exec; one whose known key is wrong fails up at once and exec
#     alone, both naming both fingerprints, while every other worker answers; one not in
#     known_hosts is refused without --yes and pinned with it. They are forgotten after.

# ---------------------------------------------------------------------------------
note "issue 11: the login under sudo"
login_is_sudo_user() {
  grep -qx '  User tpfe2e' "$state/ssh/config" && ! grep -q 'User tpufleet' "$state/ssh/config" ||
    { head -20 "$state/ssh/config"; return 1; }
  tf_exec who ex-0:0 -- whoami
  rc_is who 0 && grep -qx '\[ex-0/w0\] tpfe2e' "$tmp/who.out" || { shows who; return 1; }
}
check "under sudo the login is SUDO_USER's name: the SSH names' User, and whoami on a worker" \
  login_is_sudo_user

# ---------------------------------------------------------------------------------
note "k. ssh-hosts nodes beside the fleet (issue 11): known_hosts, a wrong key, a first up"
# Three lab machines that are ex-3's workers 1-3, named by their IPv4-mapped IPv6
# addresses (so that they are other machines to ssh than ex-3's pinned ones): box's key
# is in the user's known_hosts (hashed, as Debian's ssh writes it), bad's entry there is
# another key, and fresh is not there at all. The user logs in with a key of their own
# from an agent (the workers take the fleet key for the login tpfe2e, so a copy stands
# in for it).
lab_addr() { worker_field ex-3 "$1" address; }
lab_host() { echo "::ffff:$(lab_addr "$1")"; }
cat >"$tmp/lab.yaml" <<EOF
fleet: lab
provider: ssh-hosts
nodes:
  - name: box
    hosts: ["$(lab_host 1)"]
    ssh_user: tpfe2e
  - name: bad
    hosts: ["$(lab_host 2)"]
    ssh_user: tpfe2e
  - name: fresh
    hosts: ["$(lab_host 3)"]
    ssh_user: tpfe2e
EOF
# The SHA256 fingerprint of the ed25519 key worker $1 of ex-3 offers now.
offered_fp() {
  ssh-keyscan -T 5 -t ed25519 "$(lab_addr "$1")" 2>/dev/null | cut -d' ' -f2,3 |
    ssh-keygen -lf - | cut -d' ' -f2
}
lab_setup() {
  mkdir -p "$HOME/.ssh" && chmod 700 "$HOME/.ssh"
  eval "$(ssh-agent -s)" >/dev/null && ssh-add -q "$state/ssh/id_ed25519" 2>/dev/null ||
    { echo "no agent"; return 1; }
  echo "$(lab_host 1) $(ssh-keyscan -T 5 -t ed25519 "$(lab_addr 1)" 2>/dev/null |
    cut -d' ' -f2,3)" >"$HOME/.ssh/known_hosts"
  ssh-keygen -q -t ed25519 -N "" -f "$tmp/stranger" || return 1
  echo "$(lab_host 2) $(cut -d' ' -f1,2 "$tmp/stranger.pub")" >>"$HOME/.ssh/known_hosts"
  ssh-keygen -q -H -f "$HOME/.ssh/known_hosts" >/dev/null && rm -f "$HOME/.ssh/known_hosts.old"
  [[ $(grep -c '^|1|' "$HOME/.ssh/known_hosts") == 2 ]] ||
    { echo "known_hosts not hashed:"; cat "$HOME/.ssh/known_hosts"; return 1; }
}
check "a hashed known_hosts with box's key and a stranger's for bad; the user's key in an agent" \
  lab_setup
lab_up() {
  local start=$SECONDS want_bad got_bad
  tf up "$tmp/lab.yaml" >"$tmp/lab-up.out" 2>"$tmp/lab-up.err"
  echo $? >"$tmp/lab-up.rc"
  echo $((SECONDS - start)) >"$tmp/lab-up.secs"
  rc_is lab-up 1 || { shows lab-up; return 1; }
  ! grep -q '^tpufleet: box: ' "$tmp/lab-up.err" || { shows lab-up; return 1; }
  want_bad=$(ssh-keygen -lf "$tmp/stranger.pub" | cut -d' ' -f2)
  got_bad=$(offered_fp 2)
  grep '^tpufleet: bad: ' "$tmp/lab-up.err" | grep -F "expected $want_bad" |
    grep -qF "offered $got_bad" || { echo "want $want_bad, got $got_bad"; shows lab-up; return 1; }
  grep '^tpufleet: fresh: ' "$tmp/lab-up.err" | grep -F 'not in your known_hosts' |
    grep -qF -- '--yes' || { shows lab-up; return 1; }
  (($(cat "$tmp/lab-up.secs") < 60)) || { echo "bad took minutes"; shows lab-up; return 1; }
}
check "up: box ready; bad fails at once naming both fingerprints; fresh asks for --yes" lab_up
lab_up_yes() {
  tf up "$tmp/lab.yaml" --yes >"$tmp/lab-yes.out" 2>"$tmp/lab-yes.err"
  ! grep -q '^tpufleet: \(box\|fresh\): ' "$tmp/lab-yes.err" || { cat "$tmp/lab-yes.err"; return 1; }
  grep -F "Pinning the host key of $(lab_host 3)" "$tmp/lab-yes.err" | grep -qF "$(offered_fp 3)" ||
    { cat "$tmp/lab-yes.err"; return 1; }
}
check "up --yes pins fresh's key, showing its fingerprint" lab_up_yes
lab_exec() {
  kill "$SSH_AGENT_PID" && unset SSH_AUTH_SOCK SSH_AGENT_PID  # exec needs only the fleet key
  tf_exec lab all -- hostname
  rc_is lab 1 || { shows lab; return 1; }
  [[ $(grep -c '^\[ex-' "$tmp/lab.out") == 16 ]] || { shows lab; return 1; }
  grep -qxF "[box/w0] $(grep -F '[ex-3/w1] ' "$tmp/want.all" | cut -d' ' -f2)" "$tmp/lab.out" ||
    { shows lab; return 1; }
  grep -qF '[fresh/w0] ' "$tmp/lab.out" || { shows lab; return 1; }
  ! grep -qF '[bad/w0]' "$tmp/lab.out" || { shows lab; return 1; }
  grep -F '  bad/w0: host-key-mismatch: ' "$tmp/lab.err" | grep -F 'expected SHA256:' |
    grep -qF 'offered SHA256:' || { shows lab; return 1; }
  grep -qxF "tpufleet: 1 of 19 workers failed:" "$tmp/lab.err" || { shows lab; return 1; }
}
check "exec all: the 16 workers, box and fresh answer; bad alone fails with both fingerprints" \
  lab_exec
lab_down() {
  tf down box bad fresh --yes >"$tmp/lab-down.txt" 2>&1 || { cat "$tmp/lab-down.txt"; return 1; }
}
check "down forgets the three ssh-hosts nodes" lab_down
