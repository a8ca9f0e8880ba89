package com.example.consumer;

import io.jccl.Communicator;

/** Where classes were loaded from, as the programs print it: a named module, or the class path. */
final class Where {
    private Where() {
    }

    /** {@return "jccl in module io.jccl.core", or "jccl on the class path"} */
    static String jccl() {
        Module m = Communicator.class.getModule();
        return m.isNamed() ? "jccl in module " + m.getName() : "jccl on the class path";
    }

    /** {@return "this program in module NAME", or "this program on the class path"} */
    static String of(Class<?> program) {
        Module m = program.getModule();
        return m.isNamed() ? "this program in module " + m.getName() : "this program on the class path";
    }
}
