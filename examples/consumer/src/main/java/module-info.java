/** A user's program on the module path: jccl-core is the named module io.jccl.core. */
module com.example.consumer {
    requires io.jccl.core;
}
