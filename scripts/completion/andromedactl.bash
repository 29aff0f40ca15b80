# bash completion for andromedactl (installed as /usr/share/bash-completion/completions/andromedactl).
# Completes the commands, their options, the running instances' names for --node, and the values
# of log-level, conntrack --state and --protocol.

_andromedactl_nodes() {
    local sock
    for sock in /run/andromeda/*.sock; do
        [ -e "$sock" ] || continue
        sock=${sock##*/}
        printf '%s\n' "${sock%.sock}"
    done
}

_andromedactl() {
    local cur prev words cword
    _init_completion 2>/dev/null || {
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    }
    local commands="status health stats fabric conntrack policy leases reload log-level drops inspect"
    local command="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --node | -n | --socket) ((i++)) ;;
            -*) ;;
            *) command=${words[i]}; break ;;
        esac
    done

    case $prev in
        --node | -n) COMPREPLY=($(compgen -W "$(_andromedactl_nodes)" -- "$cur")); return ;;
        --socket | --pcap | -c | --config | --password-file | --cacert | --cert | --key)
            COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --state)
            COMPREPLY=($(compgen -W "syn_sent syn_received established fin_wait closing reset unreplied replied" -- "$cur"))
            return ;;
        --protocol) COMPREPLY=($(compgen -W "tcp udp icmp" -- "$cur")); return ;;
        --limit | --offset | --port | --address | --watch | --etcd | --prefix | --user) return ;;
    esac

    case $command in
        "") COMPREPLY=($(compgen -W "$commands --node --socket --version --help" -- "$cur")) ;;
        status | health | fabric | policy | leases | drops) COMPREPLY=($(compgen -W "--json --help" -- "$cur")) ;;
        stats) COMPREPLY=($(compgen -W "--json --watch --help" -- "$cur")) ;;
        conntrack)
            COMPREPLY=($(compgen -W "--json --limit --offset --address --port --state --protocol --help" -- "$cur")) ;;
        reload)
            if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "--json --help" -- "$cur"))
            else COMPREPLY=($(compgen -f -- "$cur")); fi ;;
        log-level) COMPREPLY=($(compgen -W "trace debug info warn error critical off --json" -- "$cur")) ;;
        inspect) COMPREPLY=($(compgen -W "--pcap --json --print-hex --andromeda-port --vxlan-port --help" -- "$cur")) ;;
    esac
}
complete -F _andromedactl andromedactl
