package org.example.corpus;

import java.util.*;
import java.util.stream.Collectors;

/** Groups orders by customer; sample Java for the tokenizer corpus. */
public final class Query {
    record Order(String customer, long cents, List<String> tags) {}

    public static Map<String, Long> totals(Collection<Order> orders) {
        return orders.stream()
            .filter(o -> o.cents() > 0L && !o.tags().contains("void"))
            .collect(Collectors.groupingBy(Order::customer, TreeMap::new,
                     Collectors.summingLong(Order::cents)));
    }

    public static void main(String[] args) throws Exception {
        var orders = List.of(new Order("ada", 1_250L, List.of("web")),
                             new Order("bob", -5L, List.of()),
                             new Order("ada", 99L, List.of("void")));
        System.out.printf("%s%n", totals(orders)); // {ada=1250}
    }
}
