1i\
// Code generated from the GA package's file of the same name by rename.sed (go generate); DO NOT EDIT.\

s/^package anthropicv2$/package beta/
s/anthropic\.ContentBlockParamUnion/anthropic.BetaContentBlockParamUnion/g
s/anthropic\.MessageParam\b/anthropic.BetaMessageParam/g
s/anthropic\.MessageNewParams\b/anthropic.BetaMessageNewParams/g
s/anthropic\.TextBlockParam\b/anthropic.BetaTextBlockParam/g
s/anthropic\.ToolResultBlockParamContentUnion/anthropic.BetaToolResultBlockParamContentUnion/g
s/anthropic\.AssistantMessageParam/anthropic.BetaAssistantMessageParam/g
s/anthropic\.UserMessageParam/anthropic.BetaUserMessageParam/g
s/anthropic\.NewTextBlock/anthropic.NewBetaTextBlock/g
s|history/anthropicv2:|history/anthropicv2/beta:|g
s|Name:    "anthropicv2",|Name:    "anthropicv2/beta",|
s/anthropic-sdk-go v2's Messages types/anthropic-sdk-go v2's beta Messages types/
s/client\.Messages\.New/client.Beta.Messages.New/g
s/anthropic\.StopReason/anthropic.BetaStopReason/g
s/anthropic\.Message\b/anthropic.BetaMessage/g
s/anthropic\.NewUserMessage/anthropic.NewBetaUserMessage/g
s|Name: "anthropicv2",|Name: "anthropicv2/beta",|
s/hanthropic\./hbeta./g
s|^// (tool_choice any or tool) or a JSON reply (output_config.format).$|// (tool_choice any or tool) or a JSON reply (output_config.format or\n// output_format), or would write to a message thread the server keeps\n// (thread).|
