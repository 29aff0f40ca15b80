// The anchor of andromeda_test_pch: the precompiled header is built with this target's flags.
