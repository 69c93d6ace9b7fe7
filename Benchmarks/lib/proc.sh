# Sourced by benchmark scripts: what a process has used so far, read from /proc.

cpu_ticks() {  # cpu_ticks PID [with-user]: user + system clock ticks the process has used so far (0 if none); with-user: "TOTAL USER" from one read
    local pid=$1 stat
    [[ -n $pid ]] && stat=$(cat "/proc/$pid/stat" 2>/dev/null) || { [[ ${2:-} == with-user ]] && echo "0 0" || echo 0; return; }
    stat=${stat##*) }  # the fields after the command name, which may hold spaces
    read -r -a fields <<<"$stat"
    # utime and stime (fields 14 and 15 of proc(5))
    if [[ ${2:-} == with-user ]]; then echo "$((fields[11] + fields[12])) ${fields[11]}"; else echo $((fields[11] + fields[12])); fi
}

syscalls() {  # syscalls PID: "READS WRITES SWITCHES" so far: read/write syscalls (/proc/PID/io) and context switches of all its threads
    local pid=$1 reads=0 writes=0 switches=0 key value file
    [[ -n $pid && -r /proc/$pid/io ]] || { echo "0 0 0"; return; }
    while read -r key value; do
        case $key in syscr:) reads=$value ;; syscw:) writes=$value ;; esac
    done <"/proc/$pid/io"
    for file in /proc/"$pid"/task/*/status; do
        while read -r key value; do
            case $key in voluntary_ctxt_switches: | nonvoluntary_ctxt_switches:) switches=$((switches + value)) ;; esac
        done <"$file" 2>/dev/null || true
    done
    echo "$reads $writes $switches"
}
