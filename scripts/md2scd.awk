# Markdown (the subset docs/*.md use) to scdoc(5), for the man pages built from the docs: the
# fleet file format's page, slipway-fleet(5), is docs/fleet.md itself, so the two cannot drift.
#
# Usage: awk -v name=slipway-fleet -v section=5 -v what="the fleet file (fleet.yaml)" \
#            -v stop="For code" -f scripts/md2scd.awk docs/fleet.md > slipway-fleet.5.scd
#   the first "# " heading becomes NAME; "## X" a section (upper case), "### X" a subsection;
#   ``` fences literal blocks; "- " and "1. " list items (continuation lines indented two
#   spaces); a table row "| a | b | c |" the definition "*a*" + "b; c" (its
#   header and rule rows dropped); "**x**" bold; other * and _ escaped; a leading . ' # escaped;
#   the text from the "## <stop>" heading on is left out (API and internals: not for the man page).
function esc(s,    out, i, c, n) {
  gsub(/\\/, "\\\\", s)
  gsub(/\*\*/, "\001", s)         # keep bold pairs aside
  gsub(/\*/, "\\*", s)
  gsub(/_/, "\\_", s)
  gsub(/\001/, "*", s)
  gsub(/\\\|/, "|", s)            # a table's escaped pipe
  if (s ~ /^[.'#`]/) s = "\\" s
  return s
}
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
BEGIN { infence = 0; started = 0; skipping = 0 }
{
  if (skipping) next
  if (infence) {
    if ($0 ~ /^```/) { print "```"; infence = 0; next }
    print; next
  }
  if ($0 ~ /^```/) { print ""; print "```"; infence = 1; next }
  if (!started && $0 ~ /^# /) {
    printf "%s(%s)\n\n# NAME\n\n%s - %s\n\n# DESCRIPTION\n", name, section, name, what
    started = 1; next
  }
  if ($0 ~ /^## /) {
    h = substr($0, 4)
    if (stop != "" && index(h, stop) == 1) { skipping = 1; next }
    print "\n# " toupper(esc(h)) "\n"; next
  }
  if ($0 ~ /^### /) { print "\n## " esc(substr($0, 5)) "\n"; next }
  if ($0 ~ /^\|/) {
    if ($0 ~ /^\|[-: |]+\|$/) { hdr = 0; next }          # the rule under the header
    if (prev !~ /^\|/) { prev = $0; next }               # the header row
    line = $0
    gsub(/\\\|/, "\002", line)
    n = split(line, c, "|")
    key = trim(c[2]); gsub(/\002/, "\\|", key)
    rest = ""
    for (i = 3; i < n; i++) {
      v = trim(c[i]); gsub(/\002/, "\\|", v)
      if (v != "") rest = rest (rest == "" ? "" : "; ") v
    }
    print "*" esc(key) "*"
    print "\t" esc(rest)
    print ""
    prev = $0; next
  }
  prev = $0
  line = $0
  if (line ~ /^  +[^ ]/ && !(line ~ /^    /)) sub(/^ +/, "  ", line)   # a list item's continuation
  if (line ~ /^- /) { print "- " esc(substr(line, 3)); next }
  if (line ~ /^[0-9]+\. /) { sub(/^[0-9]+\. /, "", line); print ". " esc(line); next }
  if (line ~ /^  [^ ]/) { print "  " esc(substr(line, 3)); next }
  sub(/^ +/, "", line)
  print esc(line)
}
